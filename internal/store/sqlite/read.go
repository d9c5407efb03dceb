package sqlite

import (
	"context"
	"database/sql"
	"strings"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// GetTask reads one of the tenant's tasks.
func (s *Backend) GetTask(ctx context.Context, p *store.GetTaskParams) (*dockettype.Task, error) {
	t, err := scanTaskExtra(s.r.QueryRowContext(ctx, taskSelect(true)+" WHERE t.id = ? AND t.tenant = ?", p.TaskID, p.Tenant))
	if err != nil {
		return nil, interpretError("get_task", err)
	}
	return t, nil
}

// ListTasks pages the tenant's tasks, newest first. A workflow filter reads
// the tenant's tasks of that workflow through their own index (tasks
// (tenant, workflow, id)), a state filter then checked on each row, so a
// page's cost does not grow with the tenant's other workflows. Without
// one, a state filter reads the live rows (queued, running) or the results
// (terminal states) through their own tenant index.
func (s *Backend) ListTasks(ctx context.Context, p *store.ListTasksParams) ([]*dockettype.Task, error) {
	var q strings.Builder
	args := []any{p.Tenant}
	idCol := "t.id"
	switch {
	case p.Workflow != "":
		q.WriteString("SELECT " + listCols + ` FROM tasks t LEFT JOIN task_queue q ON q.id = t.id
			LEFT JOIN task_results r ON r.task_id = t.id WHERE t.tenant = ? AND t.workflow = ?`)
		args = append(args, p.Workflow)
		switch {
		case p.State.Terminal():
			q.WriteString(" AND r.state = ?")
			args = append(args, string(p.State))
		case p.State != "":
			q.WriteString(" AND q.state = ?")
			args = append(args, string(p.State))
		}
	case p.State == "":
		q.WriteString("SELECT " + listCols + ` FROM tasks t LEFT JOIN task_queue q ON q.id = t.id
			LEFT JOIN task_results r ON r.task_id = t.id WHERE t.tenant = ?`)
	case p.State.Terminal():
		idCol = "r.task_id"
		q.WriteString("SELECT " + listCols + ` FROM task_results r JOIN tasks t ON t.id = r.task_id
			LEFT JOIN task_queue q ON q.id = r.task_id WHERE r.tenant = ? AND r.state = ?`)
		args = append(args, string(p.State))
	default:
		idCol = "q.id"
		q.WriteString("SELECT " + listCols + ` FROM task_queue q JOIN tasks t ON t.id = q.id
			LEFT JOIN task_results r ON r.task_id = q.id WHERE q.tenant = ? AND q.state = ?`)
		args = append(args, string(p.State))
	}
	if p.Pool != "" {
		q.WriteString(" AND t.pool = ?")
		args = append(args, string(p.Pool))
	}
	if p.After != "" {
		q.WriteString(" AND " + idCol + " < ?")
		args = append(args, p.After)
	}
	limit := p.Limit
	if limit <= 0 {
		limit = 50
	}
	q.WriteString(" ORDER BY " + idCol + " DESC LIMIT ?")
	args = append(args, limit)
	rows, err := s.r.QueryContext(ctx, q.String(), args...)
	if err != nil {
		return nil, interpretError("list_tasks", err)
	}
	tasks, err := collect(rows, scanTask)
	return tasks, interpretError("list_tasks", err)
}

// owned checks that the task belongs to the tenant.
func (s *Backend) owned(ctx context.Context, op string, p *store.GetTaskParams) error {
	var one int
	err := s.r.QueryRowContext(ctx, "SELECT 1 FROM tasks WHERE id = ? AND tenant = ?", p.TaskID, p.Tenant).Scan(&one)
	return interpretError(op, err)
}

// ListEvents returns the task's history, oldest first.
func (s *Backend) ListEvents(ctx context.Context, p *store.GetTaskParams) ([]dockettype.Event, error) {
	if err := s.owned(ctx, "list_events", p); err != nil {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx, `SELECT id, task_id, from_state, to_state, epoch, code, at
		FROM task_events WHERE task_id = ? ORDER BY id`, p.TaskID)
	if err != nil {
		return nil, interpretError("list_events", err)
	}
	out, err := collect(rows, func(r *sql.Rows) (dockettype.Event, error) {
		var (
			e              dockettype.Event
			from, to, code string
			at             int64
		)
		err := r.Scan(&e.ID, &e.TaskID, &from, &to, &e.Epoch, &code, &at)
		e.From, e.To, e.Code, e.At = dockettype.State(from), dockettype.State(to), dockettype.Code(code), fromMS(at)
		return e, err
	})
	if err != nil {
		return nil, interpretError("list_events", err)
	}
	if out == nil {
		out = []dockettype.Event{}
	}
	return out, nil
}

// ListEvidence returns the task's evidence, oldest first.
func (s *Backend) ListEvidence(ctx context.Context, p *store.GetTaskParams) ([]dockettype.Evidence, error) {
	if err := s.owned(ctx, "list_evidence", p); err != nil {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx, `SELECT id, task_id, attempt, epoch, kind, body, created_at
		FROM evidence WHERE task_id = ? ORDER BY id`, p.TaskID)
	if err != nil {
		return nil, interpretError("list_evidence", err)
	}
	out, err := collect(rows, func(r *sql.Rows) (dockettype.Evidence, error) {
		var (
			e       dockettype.Evidence
			created int64
		)
		err := r.Scan(&e.ID, &e.TaskID, &e.Attempt, &e.Epoch, &e.Kind, &e.Body, &created)
		e.CreatedAt = fromMS(created)
		return e, err
	})
	if err != nil {
		return nil, interpretError("list_evidence", err)
	}
	if out == nil {
		out = []dockettype.Evidence{}
	}
	return out, nil
}

// FindExpiredLeases scans the lease index on a read connection.
func (s *Backend) FindExpiredLeases(ctx context.Context, p *store.FindExpiredLeasesParams) ([]store.ExpiredLease, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id, lease_epoch, tenant, queue, attempt, max_attempts FROM task_queue
		WHERE state = 'running' AND lease_expires_at <= ? ORDER BY lease_expires_at LIMIT ?`, ms(p.Now), p.Limit)
	if err != nil {
		return nil, interpretError("find_expired_leases", err)
	}
	out, err := collect(rows, func(r *sql.Rows) (store.ExpiredLease, error) {
		var e store.ExpiredLease
		var queue string
		err := r.Scan(&e.TaskID, &e.Epoch, &e.Tenant, &queue, &e.Attempt, &e.MaxAttempts)
		e.Queue = store.Queue(queue)
		return e, err
	})
	return out, interpretError("find_expired_leases", err)
}

// FindOverdue scans the deadline index on a read connection.
func (s *Backend) FindOverdue(ctx context.Context, p *store.FindOverdueParams) ([]store.OverdueTask, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id, lease_epoch, tenant, queue, state FROM task_queue
		WHERE deadline_at <= ? ORDER BY deadline_at LIMIT ?`, ms(p.Now), p.Limit)
	if err != nil {
		return nil, interpretError("find_overdue", err)
	}
	out, err := collect(rows, func(r *sql.Rows) (store.OverdueTask, error) {
		var o store.OverdueTask
		var queue, state string
		err := r.Scan(&o.TaskID, &o.Epoch, &o.Tenant, &queue, &state)
		o.Queue, o.State = store.Queue(queue), dockettype.State(state)
		return o, err
	})
	return out, interpretError("find_overdue", err)
}

// Stats reads the counters, the running tasks (bounded by the workers) and,
// per pool, the oldest first-in-line task of each tenant with ready work in
// any of the pool's queues (its own and its remote workflows').
func (s *Backend) Stats(ctx context.Context) (*store.Stats, error) {
	st := &store.Stats{}
	for _, pool := range dockettype.Pools {
		ps := store.PoolStats{Pool: pool}
		var oldest sql.NullInt64
		err := s.r.QueryRowContext(ctx, `SELECT
				(SELECT coalesce(sum(n), 0) FROM counters WHERE scope = 'pool' AND key = ?1),
				(SELECT count(*) FROM task_queue WHERE state = 'running' AND (queue = ?1 OR queue LIKE ?2)),
				(SELECT count(*) FROM task_queue WHERE state = 'running' AND queue LIKE ?2),
				(SELECT min((SELECT created_at FROM task_queue q
					WHERE q.queue = tq.queue AND q.tenant = tq.tenant AND q.state = 'queued' AND q.run_after IS NULL
					ORDER BY priority DESC, id LIMIT 1))
				FROM tenant_queues tq WHERE (tq.queue = ?1 OR tq.queue LIKE ?2) AND tq.queued > 0)`,
			string(pool), string(store.RemoteQueue(pool, "%"))).Scan(&ps.InFlight, &ps.Running, &ps.RemoteRunning, &oldest)
		if err != nil {
			return nil, interpretError("stats", err)
		}
		ps.Queued = max(ps.InFlight-ps.Running, 0)
		ps.OldestQueuedAt = fromNullMS(oldest)
		st.Pools = append(st.Pools, ps)
	}
	tenants, err := s.ListTenants(ctx)
	if err != nil {
		return nil, err
	}
	st.Tenants = tenants
	return st, nil
}
