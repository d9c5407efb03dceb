package postgres

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// GetTask reads one of the tenant's tasks.
func (s *Store) GetTask(ctx context.Context, p *store.GetTaskParams) (*dockettype.Task, error) {
	t, err := scanTask(s.pool.QueryRow(ctx, "SELECT "+taskCols+" FROM tasks WHERE id = $1 AND tenant = $2", p.TaskID, p.Tenant))
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
	rows, err := s.pool.Query(ctx, "SELECT "+taskCols+" FROM tasks WHERE id = ANY($1)", ids)
	if err != nil {
		return nil, interpretError("get_tasks", err)
	}
	tasks, err := scanTasks(rows)
	return tasks, interpretError("get_tasks", err)
}

// ListTasks pages the tenant's tasks, newest first.
func (s *Store) ListTasks(ctx context.Context, p *store.ListTasksParams) ([]*dockettype.Task, error) {
	var b strings.Builder
	b.WriteString("SELECT " + taskCols + " FROM tasks WHERE tenant = $1")
	args := []any{p.Tenant}
	arg := func(cond string, v any) {
		args = append(args, v)
		b.WriteString(" AND " + cond + " $" + strconv.Itoa(len(args)))
	}
	if p.State != "" {
		arg("state =", string(p.State))
	}
	if p.Pool != "" {
		arg("pool =", string(p.Pool))
	}
	if p.After != "" {
		arg("id <", p.After)
	}
	limit := p.Limit
	if limit <= 0 {
		limit = 50
	}
	args = append(args, limit)
	b.WriteString(" ORDER BY id DESC LIMIT $" + strconv.Itoa(len(args)))
	rows, err := s.pool.Query(ctx, b.String(), args...)
	if err != nil {
		return nil, interpretError("list_tasks", err)
	}
	tasks, err := scanTasks(rows)
	return tasks, interpretError("list_tasks", err)
}

// owned checks that the task belongs to the tenant.
func (s *Store) owned(ctx context.Context, op string, p *store.GetTaskParams) error {
	var one int
	err := s.pool.QueryRow(ctx, "SELECT 1 FROM tasks WHERE id = $1 AND tenant = $2", p.TaskID, p.Tenant).Scan(&one)
	return interpretError(op, err)
}

// ListEvents returns the task's history, oldest first.
func (s *Store) ListEvents(ctx context.Context, p *store.GetTaskParams) ([]dockettype.Event, error) {
	if err := s.owned(ctx, "list_events", p); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT id, task_id, from_state, to_state, epoch, code, at
		FROM task_events WHERE task_id = $1 ORDER BY id`, p.TaskID)
	if err != nil {
		return nil, interpretError("list_events", err)
	}
	out := []dockettype.Event{}
	var (
		e              dockettype.Event
		from, to, code string
	)
	_, err = pgx.ForEachRow(rows, []any{&e.ID, &e.TaskID, &from, &to, &e.Epoch, &code, &e.At}, func() error {
		e.From, e.To, e.Code, e.At = dockettype.State(from), dockettype.State(to), dockettype.Code(code), e.At.UTC()
		out = append(out, e)
		return nil
	})
	if err != nil {
		return nil, interpretError("list_events", err)
	}
	return out, nil
}

// ListEvidence returns the task's evidence, oldest first.
func (s *Store) ListEvidence(ctx context.Context, p *store.GetTaskParams) ([]dockettype.Evidence, error) {
	if err := s.owned(ctx, "list_evidence", p); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT id, task_id, attempt, epoch, kind, body, created_at
		FROM evidence WHERE task_id = $1 ORDER BY id`, p.TaskID)
	if err != nil {
		return nil, interpretError("list_evidence", err)
	}
	out := []dockettype.Evidence{}
	var (
		e    dockettype.Evidence
		body []byte
	)
	_, err = pgx.ForEachRow(rows, []any{&e.ID, &e.TaskID, &e.Attempt, &e.Epoch, &e.Kind, &body, &e.CreatedAt}, func() error {
		e.Body = append([]byte(nil), body...)
		e.CreatedAt = e.CreatedAt.UTC()
		out = append(out, e)
		return nil
	})
	if err != nil {
		return nil, interpretError("list_evidence", err)
	}
	return out, nil
}

// GetInput returns the task's immutable input.
func (s *Store) GetInput(ctx context.Context, p *store.GetTaskParams) ([]byte, error) {
	var input []byte
	err := s.pool.QueryRow(ctx, `SELECT i.input FROM task_inputs i JOIN tasks t ON t.id = i.task_id
		WHERE t.id = $1 AND t.tenant = $2`, p.TaskID, p.Tenant).Scan(&input)
	if err != nil {
		return nil, interpretError("get_input", err)
	}
	return input, nil
}

// GetIdempotencyBinding reads one binding.
func (s *Store) GetIdempotencyBinding(ctx context.Context, tenant, key string) (*store.IdempotencyBinding, error) {
	b := &store.IdempotencyBinding{Tenant: tenant, Key: key}
	err := s.pool.QueryRow(ctx, "SELECT request_hash, task_id, created_at FROM idempotency_keys WHERE tenant = $1 AND key = $2",
		tenant, key).Scan(&b.RequestHash, &b.TaskID, &b.CreatedAt)
	if err != nil {
		return nil, interpretError("get_idempotency_binding", err)
	}
	b.CreatedAt = b.CreatedAt.UTC()
	return b, nil
}

// GetReservation reads a task's reservation.
func (s *Store) GetReservation(ctx context.Context, taskID string) (*store.Reservation, error) {
	r := &store.Reservation{TaskID: taskID}
	var (
		pool     string
		released *time.Time
	)
	err := s.pool.QueryRow(ctx, "SELECT tenant, pool, created_at, released_at FROM reservations WHERE task_id = $1",
		taskID).Scan(&r.Tenant, &pool, &r.CreatedAt, &released)
	if err != nil {
		return nil, interpretError("get_reservation", err)
	}
	r.Pool = dockettype.Pool(pool)
	r.CreatedAt = r.CreatedAt.UTC()
	r.ReleasedAt = utcPtr(released)
	return r, nil
}

// GetUsage reads the reservation counters.
func (s *Store) GetUsage(ctx context.Context) (*store.Usage, error) {
	u := &store.Usage{Pools: map[dockettype.Pool]int{}, Tenants: map[string]int{}}
	var (
		name string
		n    int
	)
	rows, err := s.pool.Query(ctx, "SELECT name, in_flight FROM pools")
	if err != nil {
		return nil, interpretError("get_usage", err)
	}
	if _, err := pgx.ForEachRow(rows, []any{&name, &n}, func() error {
		u.Pools[dockettype.Pool(name)] = n
		return nil
	}); err != nil {
		return nil, interpretError("get_usage", err)
	}
	rows, err = s.pool.Query(ctx, "SELECT id, in_flight FROM tenants WHERE in_flight > 0")
	if err != nil {
		return nil, interpretError("get_usage", err)
	}
	if _, err := pgx.ForEachRow(rows, []any{&name, &n}, func() error {
		u.Tenants[name] = n
		return nil
	}); err != nil {
		return nil, interpretError("get_usage", err)
	}
	return u, nil
}

// CountByState counts tasks per pool and state from the (pool, state) index.
func (s *Store) CountByState(ctx context.Context) ([]store.StateCount, error) {
	rows, err := s.pool.Query(ctx, "SELECT pool, state, count(*) FROM tasks GROUP BY pool, state ORDER BY pool, state")
	if err != nil {
		return nil, interpretError("count_by_state", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.StateCount, error) {
		var c store.StateCount
		var pool, state string
		err := r.Scan(&pool, &state, &c.Count)
		c.Pool, c.State = dockettype.Pool(pool), dockettype.State(state)
		return c, err
	})
	return out, interpretError("count_by_state", err)
}
