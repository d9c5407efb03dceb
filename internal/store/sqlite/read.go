package sqlite

import (
	"context"
	"database/sql"
	"strings"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// GetTask reads one of the tenant's tasks.
func (s *Store) GetTask(ctx context.Context, p *store.GetTaskParams) (*dockettype.Task, error) {
	t, err := scanTask(s.r.QueryRowContext(ctx, "SELECT "+taskCols+" FROM tasks WHERE id = ? AND tenant = ?", p.TaskID, p.Tenant))
	if err != nil {
		return nil, interpretError("get_task", err)
	}
	return t, nil
}

// GetTasks reads the tasks among ids that exist.
func (s *Store) GetTasks(ctx context.Context, ids []string) ([]*dockettype.Task, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	rows, err := s.r.QueryContext(ctx, "SELECT "+taskCols+" FROM tasks WHERE id IN ("+placeholders(len(ids))+")", args...)
	if err != nil {
		return nil, interpretError("get_tasks", err)
	}
	tasks, err := scanTasks(rows)
	return tasks, interpretError("get_tasks", err)
}

// ListTasks pages the tenant's tasks, newest first.
func (s *Store) ListTasks(ctx context.Context, p *store.ListTasksParams) ([]*dockettype.Task, error) {
	var b strings.Builder
	b.WriteString("SELECT " + taskCols + " FROM tasks WHERE tenant = ?")
	args := []any{p.Tenant}
	if p.State != "" {
		b.WriteString(" AND state = ?")
		args = append(args, p.State)
	}
	if p.Pool != "" {
		b.WriteString(" AND pool = ?")
		args = append(args, p.Pool)
	}
	if p.After != "" {
		b.WriteString(" AND id < ?")
		args = append(args, p.After)
	}
	limit := p.Limit
	if limit <= 0 {
		limit = 50
	}
	b.WriteString(" ORDER BY id DESC LIMIT ?")
	args = append(args, limit)
	rows, err := s.r.QueryContext(ctx, b.String(), args...)
	if err != nil {
		return nil, interpretError("list_tasks", err)
	}
	tasks, err := scanTasks(rows)
	return tasks, interpretError("list_tasks", err)
}

// owned checks that the task belongs to the tenant.
func (s *Store) owned(ctx context.Context, op string, p *store.GetTaskParams) error {
	var one int
	err := s.r.QueryRowContext(ctx, "SELECT 1 FROM tasks WHERE id = ? AND tenant = ?", p.TaskID, p.Tenant).Scan(&one)
	return interpretError(op, err)
}

// ListEvents returns the task's history, oldest first.
func (s *Store) ListEvents(ctx context.Context, p *store.GetTaskParams) ([]dockettype.Event, error) {
	if err := s.owned(ctx, "list_events", p); err != nil {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx, `SELECT id, task_id, from_state, to_state, epoch, code, at
		FROM task_events WHERE task_id = ? ORDER BY id`, p.TaskID)
	if err != nil {
		return nil, interpretError("list_events", err)
	}
	defer rows.Close()
	out := []dockettype.Event{}
	for rows.Next() {
		var e dockettype.Event
		var at int64
		if err := rows.Scan(&e.ID, &e.TaskID, &e.From, &e.To, &e.Epoch, &e.Code, &at); err != nil {
			return nil, interpretError("list_events", err)
		}
		e.At = fromMS(at)
		out = append(out, e)
	}
	return out, interpretError("list_events", rows.Err())
}

// ListEvidence returns the task's evidence, oldest first.
func (s *Store) ListEvidence(ctx context.Context, p *store.GetTaskParams) ([]dockettype.Evidence, error) {
	if err := s.owned(ctx, "list_evidence", p); err != nil {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx, `SELECT id, task_id, attempt, epoch, kind, body, created_at
		FROM evidence WHERE task_id = ? ORDER BY id`, p.TaskID)
	if err != nil {
		return nil, interpretError("list_evidence", err)
	}
	defer rows.Close()
	out := []dockettype.Evidence{}
	for rows.Next() {
		var e dockettype.Evidence
		var at int64
		var body []byte
		if err := rows.Scan(&e.ID, &e.TaskID, &e.Attempt, &e.Epoch, &e.Kind, &body, &at); err != nil {
			return nil, interpretError("list_evidence", err)
		}
		e.Body = append([]byte(nil), body...)
		e.CreatedAt = fromMS(at)
		out = append(out, e)
	}
	return out, interpretError("list_evidence", rows.Err())
}

// GetInput returns the task's immutable input.
func (s *Store) GetInput(ctx context.Context, p *store.GetTaskParams) ([]byte, error) {
	var input []byte
	err := s.r.QueryRowContext(ctx, `SELECT i.input FROM task_inputs i JOIN tasks t ON t.id = i.task_id
		WHERE t.id = ? AND t.tenant = ?`, p.TaskID, p.Tenant).Scan(&input)
	if err != nil {
		return nil, interpretError("get_input", err)
	}
	return input, nil
}

// GetIdempotencyBinding reads one binding.
func (s *Store) GetIdempotencyBinding(ctx context.Context, tenant, key string) (*store.IdempotencyBinding, error) {
	b := &store.IdempotencyBinding{Tenant: tenant, Key: key}
	var at int64
	err := s.r.QueryRowContext(ctx, "SELECT request_hash, task_id, created_at FROM idempotency_keys WHERE tenant = ? AND key = ?",
		tenant, key).Scan(&b.RequestHash, &b.TaskID, &at)
	if err != nil {
		return nil, interpretError("get_idempotency_binding", err)
	}
	b.CreatedAt = fromMS(at)
	return b, nil
}

// GetReservation reads a task's reservation.
func (s *Store) GetReservation(ctx context.Context, taskID string) (*store.Reservation, error) {
	r := &store.Reservation{TaskID: taskID}
	var at int64
	var released sql.NullInt64
	err := s.r.QueryRowContext(ctx, "SELECT tenant, pool, created_at, released_at FROM reservations WHERE task_id = ?",
		taskID).Scan(&r.Tenant, &r.Pool, &at, &released)
	if err != nil {
		return nil, interpretError("get_reservation", err)
	}
	r.CreatedAt = fromMS(at)
	r.ReleasedAt = fromNullMS(released)
	return r, nil
}

// GetUsage reads the reservation counters.
func (s *Store) GetUsage(ctx context.Context) (*store.Usage, error) {
	u := &store.Usage{Pools: map[dockettype.Pool]int{}, Tenants: map[string]int{}}
	rows, err := s.r.QueryContext(ctx, "SELECT name, in_flight FROM pools")
	if err != nil {
		return nil, interpretError("get_usage", err)
	}
	for rows.Next() {
		var p dockettype.Pool
		var n int
		if err := rows.Scan(&p, &n); err != nil {
			rows.Close()
			return nil, interpretError("get_usage", err)
		}
		u.Pools[p] = n
	}
	rows.Close()
	rows, err = s.r.QueryContext(ctx, "SELECT id, in_flight FROM tenants WHERE in_flight > 0")
	if err != nil {
		return nil, interpretError("get_usage", err)
	}
	defer rows.Close()
	for rows.Next() {
		var t string
		var n int
		if err := rows.Scan(&t, &n); err != nil {
			return nil, interpretError("get_usage", err)
		}
		u.Tenants[t] = n
	}
	return u, interpretError("get_usage", rows.Err())
}

// CountByState counts tasks per pool and state. It scans the table: for the
// dashboard and occasional reads, not for a hot path.
func (s *Store) CountByState(ctx context.Context) ([]store.StateCount, error) {
	rows, err := s.r.QueryContext(ctx, "SELECT pool, state, count(*) FROM tasks GROUP BY pool, state ORDER BY pool, state")
	if err != nil {
		return nil, interpretError("count_by_state", err)
	}
	defer rows.Close()
	var out []store.StateCount
	for rows.Next() {
		var c store.StateCount
		if err := rows.Scan(&c.Pool, &c.State, &c.Count); err != nil {
			return nil, interpretError("count_by_state", err)
		}
		out = append(out, c)
	}
	return out, interpretError("count_by_state", rows.Err())
}
