package engine

import (
	"context"
	"encoding/json"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// dependsOn reads the tasks a task depends on, in the order given (nil when
// none).
func dependsOn(q Querier, id string) ([]string, error) {
	var dep string
	ids, err := all(q, func(r Row) (string, error) { err := r.Scan(&dep); return dep, err },
		"SELECT depends_on FROM task_dependencies WHERE task_id = $1 ORDER BY ord", id)
	if len(ids) == 0 {
		return nil, err
	}
	return ids, err
}

// DependencyResults reads the outcome of each task a tenant's task depends
// on; see store.Reader. A dependency deleted by retention (possible only
// once its dependent has finished) has an empty state.
func (s *Store) DependencyResults(ctx context.Context, p *store.GetTaskParams) ([]dockettype.DependencyResult, error) {
	return read(ctx, s.b, "dependency_results", func(q Querier) ([]dockettype.DependencyResult, error) {
		var found int
		if _, err := one(q, scanInto(&found), "SELECT 1 FROM tasks WHERE id = $1 AND tenant = $2", p.TaskID, p.Tenant); err != nil {
			return nil, err
		}
		return all(q, func(r Row) (dockettype.DependencyResult, error) {
			var d dockettype.DependencyResult
			var state string
			var result []byte
			var code, msg *string
			if err := r.Scan(&d.ID, &state, &result, &code, &msg); err != nil {
				return d, err
			}
			d.State = dockettype.State(state)
			if len(result) > 0 {
				d.Result = json.RawMessage(result)
			}
			if code != nil && *code != "" {
				d.Error = &dockettype.TaskError{Code: dockettype.Code(*code)}
				if msg != nil {
					d.Error.Message = *msg
				}
			}
			return d, nil
		}, `SELECT d.depends_on, coalesce(r.state, q.state, ''), r.result, r.error_code, r.error_message
			FROM task_dependencies d LEFT JOIN task_results r ON r.task_id = d.depends_on
				LEFT JOIN task_queue q ON q.id = d.depends_on
			WHERE d.task_id = $1 ORDER BY d.ord`, p.TaskID)
	})
}

// TaskStates reads the states of some of a tenant's tasks; see
// store.Reader.
func (s *Store) TaskStates(ctx context.Context, p *store.TaskStatesParams) (map[string]dockettype.State, error) {
	out := map[string]dockettype.State{}
	if len(p.IDs) == 0 {
		return out, nil
	}
	ids, err := json.Marshal(p.IDs)
	if err != nil {
		return nil, err
	}
	_, err = read(ctx, s.b, "task_states", func(q Querier) ([]struct{}, error) {
		var id, state string
		return all(q, func(r Row) (struct{}, error) {
			if err := r.Scan(&id, &state); err != nil {
				return struct{}{}, err
			}
			out[id] = dockettype.State(state)
			return struct{}{}, nil
		}, `SELECT t.id, coalesce(q.state, r.state) FROM tasks t LEFT JOIN task_queue q ON q.id = t.id
			LEFT JOIN task_results r ON r.task_id = t.id
			WHERE t.id IN (`+s.b.Dialect().IDsOf+`) AND t.tenant = $2`, string(ids), p.Tenant)
	})
	return out, err
}
