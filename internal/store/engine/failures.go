package engine

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// MatchTasks pages the tasks matching a filter by ID, ascending. A state
// filter reads the live rows or the results from their own table (a
// terminal state with a tenant through task_results (tenant, state,
// task_id)), so a batch reads about as many rows as the filter keeps.
func (s *Store) MatchTasks(ctx context.Context, p *store.MatchTasksParams) ([]store.MatchedTask, error) {
	if p.Limit <= 0 {
		return nil, invalid("match_tasks", "limit is required")
	}
	sql, args := matchTasksQuery(p)
	return read(ctx, s.b, "match_tasks", func(q Querier) ([]store.MatchedTask, error) {
		return all(q, func(r Row) (store.MatchedTask, error) {
			var m store.MatchedTask
			var pool, state string
			err := r.Scan(&m.TaskID, &m.Tenant, &m.Workflow, &pool, &state)
			m.Pool, m.State = dockettype.Pool(pool), dockettype.State(state)
			return m, err
		}, sql, args...)
	})
}

// matchTasksQuery builds MatchTasks' statement.
func matchTasksQuery(p *store.MatchTasksParams) (string, []any) {
	f := &p.Filter
	var q strings.Builder
	var args []any
	arg := func(cond string, v any) {
		args = append(args, v)
		q.WriteString(" AND " + cond + " $" + strconv.Itoa(len(args)))
	}
	// The table a task may or may not have a row in is read through
	// correlated subqueries, one primary-key probe per task: as a left
	// join, a planner whose statistics still saw it small (a bulk retry
	// fills task_queue as it goes) chose a scan of the whole table per
	// task, which made each batch slower than the last (0.1 s to 1.8 s per
	// thousand over ten thousand tasks).
	live := func(col, id string) string { return "(SELECT q." + col + " FROM task_queue q WHERE q.id = " + id + ")" }
	done := func(col, id string) string {
		return "(SELECT r." + col + " FROM task_results r WHERE r.task_id = " + id + ")"
	}
	idCol, tenantCol := "t.id", "t.tenant"
	var state, errorCode string
	switch {
	case f.State.Terminal():
		idCol, tenantCol = "r.task_id", "r.tenant"
		state, errorCode = "coalesce("+live("state", "r.task_id")+", r.state)", "coalesce(r.error_code, "+live("error_code", "r.task_id")+")"
		q.WriteString("SELECT t.id, t.tenant, t.workflow, t.pool, " + state + ` FROM task_results r JOIN tasks t ON t.id = r.task_id WHERE true`)
		arg("r.state =", string(f.State))
	case f.State != "":
		idCol, tenantCol = "q.id", "q.tenant"
		errorCode = "coalesce(" + done("error_code", "q.id") + ", q.error_code)"
		q.WriteString(`SELECT t.id, t.tenant, t.workflow, t.pool, q.state FROM task_queue q JOIN tasks t ON t.id = q.id WHERE true`)
		arg("q.state =", string(f.State))
	default:
		state = "coalesce(" + live("state", "t.id") + ", " + done("state", "t.id") + ")"
		errorCode = "coalesce(" + done("error_code", "t.id") + ", " + live("error_code", "t.id") + ")"
		q.WriteString("SELECT t.id, t.tenant, t.workflow, t.pool, " + state + ` FROM tasks t WHERE true`)
	}
	if f.Tenant != "" {
		arg(tenantCol+" =", f.Tenant)
	}
	if f.Workflow != "" {
		arg("t.workflow =", f.Workflow)
	}
	if f.Pool != "" {
		arg("t.pool =", string(f.Pool))
	}
	if f.ErrorCode != "" {
		arg(errorCode+" =", string(f.ErrorCode))
	}
	if f.CreatedBefore != nil {
		arg("t.created_at <", ts(*f.CreatedBefore))
	}
	if f.CreatedAfter != nil {
		arg("t.created_at >", ts(*f.CreatedAfter))
	}
	if p.TaskID != "" {
		arg(idCol+" =", p.TaskID)
	}
	if p.After != "" {
		arg(idCol+" >", p.After)
	}
	args = append(args, p.Limit)
	q.WriteString(" ORDER BY " + idCol + " LIMIT $" + strconv.Itoa(len(args)))
	return q.String(), args
}

// DeleteTasks deletes terminal tasks now; see store.Failures. Their result
// rows are locked first, so that a retry of one of them either revives it
// before (and it is not deleted) or finds it gone.
func (s *Store) DeleteTasks(ctx context.Context, p *store.DeleteTasksParams) ([]string, error) {
	if len(p.TaskIDs) == 0 {
		return []string{}, nil
	}
	var out []string
	err := s.b.Write(ctx, "delete_tasks", func(tx Tx) error {
		out = nil
		finished, err := tx.LockFinished(taskIDs(p.TaskIDs, func(id string) string { return id }))
		if err != nil {
			return err
		}
		var ids []string
		for _, f := range finished {
			if p.Tenant == "" || f.Tenant == p.Tenant {
				ids = append(ids, f.TaskID)
			}
		}
		if len(ids) == 0 {
			return nil
		}
		// A task a waiting task depends on stays, as with retention: its
		// dependent still reads its result.
		waiting, err := tx.Dependents(ids)
		if err != nil {
			return err
		}
		keep := make(map[string]bool, len(waiting))
		for _, d := range waiting {
			keep[d.DependsOn] = true
		}
		for _, id := range ids {
			if !keep[id] {
				out = append(out, id)
			}
		}
		if len(out) == 0 {
			return nil
		}
		freed, err := tx.DeleteTasks(out)
		if err != nil {
			return err
		}
		c := newChanges()
		for tenant, bytes := range freed {
			c.stored(tenant, -bytes)
		}
		return c.flush(tx, time.Time{})
	})
	if err != nil {
		return nil, err
	}
	if out == nil {
		out = []string{}
	}
	return out, nil
}

// DeadLetters groups the failed tasks; its cost grows with their number
// (an operator's view, not a hot path), bounded by the result index.
func (s *Store) DeadLetters(ctx context.Context, p *store.DeadLettersParams) ([]store.DeadLetterGroup, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = 100
	}
	return read(ctx, s.b, "dead_letters", func(q Querier) ([]store.DeadLetterGroup, error) {
		return all(q, func(r Row) (store.DeadLetterGroup, error) {
			var g store.DeadLetterGroup
			var code string
			err := r.Scan(&g.Tenant, &g.Workflow, &code, &g.Count, At(&g.Oldest), At(&g.Newest))
			g.Code = dockettype.Code(code)
			return g, err
		}, `SELECT r.tenant, t.workflow, coalesce(r.error_code, ''), count(*), min(r.finished_at), max(r.finished_at)
			FROM task_results r JOIN tasks t ON t.id = r.task_id
			WHERE r.state = 'failed' AND ($1 = '' OR r.tenant = $1)
			GROUP BY r.tenant, t.workflow, coalesce(r.error_code, '')
			ORDER BY count(*) DESC, r.tenant, t.workflow, coalesce(r.error_code, '') LIMIT $2`, p.Tenant, limit)
	})
}
