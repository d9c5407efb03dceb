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
func (b *Backend) GetTask(ctx context.Context, p *store.GetTaskParams) (*dockettype.Task, error) {
	t, err := scanTask(b.pool.QueryRow(ctx, taskSelect(true)+" WHERE t.id = $1 AND t.tenant = $2", p.TaskID, p.Tenant))
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
// (terminal states) through their own tenant index, so a page costs the
// same whatever the others hold.
func (b *Backend) ListTasks(ctx context.Context, p *store.ListTasksParams) ([]*dockettype.Task, error) {
	var q strings.Builder
	args := []any{p.Tenant}
	arg := func(cond string, v any) {
		args = append(args, v)
		q.WriteString(" AND " + cond + " $" + strconv.Itoa(len(args)))
	}
	idCol := "t.id"
	switch {
	case p.Workflow != "":
		q.WriteString("SELECT " + listCols + ` FROM tasks t LEFT JOIN task_queue q ON q.id = t.id
			LEFT JOIN task_results r ON r.task_id = t.id WHERE t.tenant = $1`)
		arg("t.workflow =", p.Workflow)
		switch {
		case p.State.Terminal():
			arg("r.state =", string(p.State))
		case p.State != "":
			arg("q.state =", string(p.State))
		}
	case p.State == "":
		q.WriteString("SELECT " + listCols + ` FROM tasks t LEFT JOIN task_queue q ON q.id = t.id
			LEFT JOIN task_results r ON r.task_id = t.id WHERE t.tenant = $1`)
	case p.State.Terminal():
		idCol = "r.task_id"
		q.WriteString("SELECT " + listCols + ` FROM task_results r JOIN tasks t ON t.id = r.task_id
			LEFT JOIN task_queue q ON q.id = r.task_id WHERE r.tenant = $1`)
		arg("r.state =", string(p.State))
	default:
		idCol = "q.id"
		q.WriteString("SELECT " + listCols + ` FROM task_queue q JOIN tasks t ON t.id = q.id
			LEFT JOIN task_results r ON r.task_id = q.id WHERE q.tenant = $1`)
		arg("q.state =", string(p.State))
	}
	if p.Pool != "" {
		arg("t.pool =", string(p.Pool))
	}
	if p.After != "" {
		arg(idCol+" <", p.After)
	}
	limit := p.Limit
	if limit <= 0 {
		limit = 50
	}
	args = append(args, limit)
	q.WriteString(" ORDER BY " + idCol + " DESC LIMIT $" + strconv.Itoa(len(args)))
	rows, err := b.pool.Query(ctx, q.String(), args...)
	if err != nil {
		return nil, interpretError("list_tasks", err)
	}
	tasks, err := scanTasks(rows)
	return tasks, interpretError("list_tasks", err)
}

// owned checks that the task belongs to the tenant.
func (b *Backend) owned(ctx context.Context, op string, p *store.GetTaskParams) error {
	var one int
	err := b.pool.QueryRow(ctx, "SELECT 1 FROM tasks WHERE id = $1 AND tenant = $2", p.TaskID, p.Tenant).Scan(&one)
	return interpretError(op, err)
}

// ListEvents returns the task's history, oldest first.
func (b *Backend) ListEvents(ctx context.Context, p *store.GetTaskParams) ([]dockettype.Event, error) {
	if err := b.owned(ctx, "list_events", p); err != nil {
		return nil, err
	}
	rows, err := b.pool.Query(ctx, `SELECT id, task_id, from_state, to_state, epoch, code, at
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
func (b *Backend) ListEvidence(ctx context.Context, p *store.GetTaskParams) ([]dockettype.Evidence, error) {
	if err := b.owned(ctx, "list_evidence", p); err != nil {
		return nil, err
	}
	rows, err := b.pool.Query(ctx, `SELECT id, task_id, attempt, epoch, kind, body, created_at
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

// findExpiredSQL reads up to $2 leases expired at $1 from the lease index.
const findExpiredSQL = `SELECT id, lease_epoch, tenant, queue, attempt, max_attempts FROM task_queue
	WHERE state = 'running' AND lease_expires_at <= $1 ORDER BY lease_expires_at LIMIT $2`

// findOverdueSQL reads up to $2 live tasks past their deadline at $1 from
// the deadline index.
const findOverdueSQL = `SELECT id, lease_epoch, tenant, queue, state FROM task_queue
	WHERE deadline_at <= $1 ORDER BY deadline_at LIMIT $2`

// FindExpiredLeases scans the lease index; it takes no locks.
func (b *Backend) FindExpiredLeases(ctx context.Context, p *store.FindExpiredLeasesParams) ([]store.ExpiredLease, error) {
	rows, err := b.pool.Query(ctx, findExpiredSQL, ts(p.Now), p.Limit)
	if err != nil {
		return nil, interpretError("find_expired_leases", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.ExpiredLease, error) {
		var e store.ExpiredLease
		var queue string
		err := r.Scan(&e.TaskID, &e.Epoch, &e.Tenant, &queue, &e.Attempt, &e.MaxAttempts)
		e.Queue = store.Queue(queue)
		return e, err
	})
	return out, interpretError("find_expired_leases", err)
}

// FindOverdue scans the deadline index; it takes no locks.
func (b *Backend) FindOverdue(ctx context.Context, p *store.FindOverdueParams) ([]store.OverdueTask, error) {
	rows, err := b.pool.Query(ctx, findOverdueSQL, ts(p.Now), p.Limit)
	if err != nil {
		return nil, interpretError("find_overdue", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.OverdueTask, error) {
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
func (b *Backend) Stats(ctx context.Context) (*store.Stats, error) {
	st := &store.Stats{}
	for _, pool := range dockettype.Pools {
		ps := store.PoolStats{Pool: pool}
		var oldest *time.Time
		err := b.pool.QueryRow(ctx, `SELECT
				(SELECT coalesce(sum(n), 0) FROM counters WHERE scope = 'pool' AND key = $1),
				(SELECT count(*) FROM task_queue WHERE state = 'running' AND (queue = $1 OR queue LIKE $2)),
				(SELECT count(*) FROM task_queue WHERE state = 'running' AND queue LIKE $2),
				(SELECT min(f.created_at) FROM tenant_queues tq CROSS JOIN LATERAL (
					SELECT created_at FROM task_queue q
					WHERE q.queue = tq.queue AND q.tenant = tq.tenant AND q.state = 'queued' AND q.run_after IS NULL
					ORDER BY priority DESC, id LIMIT 1) f
				WHERE (tq.queue = $1 OR tq.queue LIKE $2) AND tq.queued > 0)`,
			string(pool), string(store.RemoteQueue(pool, "%"))).Scan(&ps.InFlight, &ps.Running, &ps.RemoteRunning, &oldest)
		if err != nil {
			return nil, interpretError("stats", err)
		}
		ps.Queued = max(ps.InFlight-ps.Running, 0)
		ps.OldestQueuedAt = utcPtr(oldest)
		st.Pools = append(st.Pools, ps)
	}
	tenants, err := b.ListTenants(ctx)
	if err != nil {
		return nil, err
	}
	st.Tenants = tenants
	return st, nil
}
