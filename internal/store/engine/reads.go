package engine

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// DefaultListLimit is the page size of ListTasks when none is given.
const DefaultListLimit = 50

// GetTask reads one of the tenant's tasks.
func (s *Store) GetTask(ctx context.Context, p *store.GetTaskParams) (*dockettype.Task, error) {
	return read(ctx, s.b, "get_task", func(q Querier) (*dockettype.Task, error) {
		t, err := one(q, scanTask, TaskSelect(true)+" WHERE t.id = $1 AND t.tenant = $2", p.TaskID, p.Tenant)
		if err != nil {
			return nil, err
		}
		if t.DependsOn, err = dependsOn(q, t.ID); err != nil {
			return nil, err
		}
		return t, annotate(q, []*dockettype.Task{t}, p.Now)
	})
}

// ListTasks pages the tenant's tasks, newest first. A state filter reads
// the live rows (queued, running) or the results (terminal states) through
// their own tenant index, so a page costs the same whatever the others
// hold.
func (s *Store) ListTasks(ctx context.Context, p *store.ListTasksParams) ([]*dockettype.Task, error) {
	sql, args := listTasksQuery(p)
	return read(ctx, s.b, "list_tasks", func(q Querier) ([]*dockettype.Task, error) {
		tasks, err := all(q, scanTask, sql, args...)
		if err != nil {
			return nil, err
		}
		return tasks, annotate(q, tasks, p.Now)
	})
}

// listTasksQuery builds ListTasks' statement.
func listTasksQuery(p *store.ListTasksParams) (string, []any) {
	var q strings.Builder
	args := []any{p.Tenant}
	arg := func(cond string, v any) {
		args = append(args, v)
		q.WriteString(" AND " + cond + " $" + strconv.Itoa(len(args)))
	}
	idCol := "t.id"
	switch {
	case p.Workflow != "":
		// The tenant's tasks of that workflow through their own index
		// (tasks (tenant, workflow, id)), a state filter then checked on
		// each row: a page's cost does not grow with the tenant's other
		// workflows.
		q.WriteString("SELECT " + listColumns + ` FROM tasks t LEFT JOIN task_queue q ON q.id = t.id
			LEFT JOIN task_results r ON r.task_id = t.id WHERE t.tenant = $1`)
		arg("t.workflow =", p.Workflow)
		switch {
		case p.State.Terminal():
			arg("r.state =", string(p.State))
		case p.State != "":
			arg("q.state =", string(p.State))
		}
	case p.State == "":
		q.WriteString("SELECT " + listColumns + ` FROM tasks t LEFT JOIN task_queue q ON q.id = t.id
			LEFT JOIN task_results r ON r.task_id = t.id WHERE t.tenant = $1`)
	case p.State.Terminal():
		idCol = "r.task_id"
		q.WriteString("SELECT " + listColumns + ` FROM task_results r JOIN tasks t ON t.id = r.task_id
			LEFT JOIN task_queue q ON q.id = r.task_id WHERE r.tenant = $1`)
		arg("r.state =", string(p.State))
	default:
		idCol = "q.id"
		q.WriteString("SELECT " + listColumns + ` FROM task_queue q JOIN tasks t ON t.id = q.id
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
		limit = DefaultListLimit
	}
	args = append(args, limit)
	q.WriteString(" ORDER BY " + idCol + " DESC LIMIT $" + strconv.Itoa(len(args)))
	return q.String(), args
}

// ownedSQL finds a tenant's task.
const ownedSQL = "SELECT 1 FROM tasks WHERE id = $1 AND tenant = $2"

// ListEvents returns the task's history, oldest first.
func (s *Store) ListEvents(ctx context.Context, p *store.GetTaskParams) ([]dockettype.Event, error) {
	return read(ctx, s.b, "list_events", func(q Querier) ([]dockettype.Event, error) {
		if _, err := one(q, scanInto(new(int)), ownedSQL, p.TaskID, p.Tenant); err != nil {
			return nil, err
		}
		return all(q, func(r Row) (dockettype.Event, error) {
			var (
				e                   dockettype.Event
				from, to, code      string
				actorKey, actorRole string
			)
			err := r.Scan(&e.ID, &e.TaskID, &from, &to, &e.Epoch, &code, At(&e.At), &actorKey, &actorRole)
			e.From, e.To, e.Code = dockettype.State(from), dockettype.State(to), dockettype.Code(code)
			if actorKey != "" {
				e.By = &dockettype.Actor{KeyID: actorKey, Role: dockettype.Role(actorRole)}
			}
			return e, err
		}, `SELECT id, task_id, from_state, to_state, epoch, code, at, actor_key, actor_role
			FROM task_events WHERE task_id = $1 ORDER BY id`, p.TaskID)
	})
}

// GetInput reads the task's input from its immutable record.
func (s *Store) GetInput(ctx context.Context, p *store.GetTaskParams) ([]byte, error) {
	return read(ctx, s.b, "get_input", func(q Querier) ([]byte, error) {
		var input []byte
		_, err := one(q, scanInto(&input), "SELECT input FROM tasks WHERE id = $1 AND tenant = $2", p.TaskID, p.Tenant)
		return input, err
	})
}

// ListEvidence returns the task's evidence, oldest first.
func (s *Store) ListEvidence(ctx context.Context, p *store.GetTaskParams) ([]dockettype.Evidence, error) {
	return read(ctx, s.b, "list_evidence", func(q Querier) ([]dockettype.Evidence, error) {
		if _, err := one(q, scanInto(new(int)), ownedSQL, p.TaskID, p.Tenant); err != nil {
			return nil, err
		}
		return all(q, func(r Row) (dockettype.Evidence, error) {
			var e dockettype.Evidence
			err := r.Scan(&e.ID, &e.TaskID, &e.Attempt, &e.Epoch, &e.Kind, &e.Body, At(&e.CreatedAt))
			return e, err
		}, "SELECT id, task_id, attempt, epoch, kind, body, created_at FROM evidence WHERE task_id = $1 ORDER BY id", p.TaskID)
	})
}

// FindExpiredLeasesSQL reads up to $2 leases expired at $1 from the lease
// index.
const FindExpiredLeasesSQL = `SELECT id, lease_epoch, tenant, queue, attempt, max_attempts FROM task_queue
	WHERE state = 'running' AND lease_expires_at <= $1 ORDER BY lease_expires_at LIMIT $2`

// FindOverdueSQL reads up to $2 live tasks past their deadline at $1 from
// the deadline index.
const FindOverdueSQL = `SELECT id, lease_epoch, tenant, queue, state FROM task_queue
	WHERE deadline_at <= $1 ORDER BY deadline_at LIMIT $2`

// FindExpiredLeases scans the lease index; it takes no locks.
func (s *Store) FindExpiredLeases(ctx context.Context, p *store.FindExpiredLeasesParams) ([]store.ExpiredLease, error) {
	return read(ctx, s.b, "find_expired_leases", func(q Querier) ([]store.ExpiredLease, error) {
		return all(q, func(r Row) (store.ExpiredLease, error) {
			var e store.ExpiredLease
			err := r.Scan(&e.TaskID, &e.Epoch, &e.Tenant, &e.Queue, &e.Attempt, &e.MaxAttempts)
			return e, err
		}, FindExpiredLeasesSQL, ts(p.Now), p.Limit)
	})
}

// FindOverdue scans the deadline index; it takes no locks.
func (s *Store) FindOverdue(ctx context.Context, p *store.FindOverdueParams) ([]store.OverdueTask, error) {
	return read(ctx, s.b, "find_overdue", func(q Querier) ([]store.OverdueTask, error) {
		return all(q, func(r Row) (store.OverdueTask, error) {
			var o store.OverdueTask
			err := r.Scan(&o.TaskID, &o.Epoch, &o.Tenant, &o.Queue, &o.State)
			return o, err
		}, FindOverdueSQL, ts(p.Now), p.Limit)
	})
}

// poolStatsSQL reads a pool's in-flight count (its counters), its running
// tasks (its own queue's and its remote queues') and its remote queues'
// running tasks, then the dialect's OldestReady: $1 the pool, $2 the LIKE
// pattern of its remote queues.
const poolStatsSQL = `SELECT
	(SELECT coalesce(sum(n), 0) FROM counters WHERE scope = 'pool' AND key = $1),
	(SELECT count(*) FROM task_queue WHERE state = 'running' AND (queue = $1 OR queue LIKE $2)),
	(SELECT count(*) FROM task_queue WHERE state = 'running' AND queue LIKE $2),
	`

// Stats reads the counters, the running tasks (bounded by the workers) and,
// per pool, the oldest first-in-line task of each tenant with ready work in
// any of the pool's queues (its own and its remote workflows').
func (s *Store) Stats(ctx context.Context) (*store.Stats, error) {
	st, err := read(ctx, s.b, "stats", func(q Querier) (*store.Stats, error) {
		st := &store.Stats{}
		for _, pool := range dockettype.Pools {
			ps := store.PoolStats{Pool: pool}
			_, err := one(q, scanInto(&ps.InFlight, &ps.Running, &ps.RemoteRunning, AtOrNil(&ps.OldestQueuedAt)),
				poolStatsSQL+"("+s.b.Dialect().OldestReady+")", string(pool), string(store.RemoteQueue(pool, "%")))
			if err != nil {
				return nil, err
			}
			ps.Queued = max(ps.InFlight-ps.Running, 0)
			st.Pools = append(st.Pools, ps)
		}
		return st, nil
	})
	if err != nil {
		return nil, err
	}
	if st.Tenants, err = s.ListTenants(ctx); err != nil {
		return nil, err
	}
	return st, nil
}

// pingSQL checks that the database answers and holds Docket's schema.
const pingSQL = "SELECT 1 FROM counters LIMIT 1"

// DatabaseTime returns the database's clock (for SQLite, which runs in the
// process, the process's), once the database answers.
func (s *Store) DatabaseTime(ctx context.Context) (time.Time, error) {
	return read(ctx, s.b, "database_time", func(q Querier) (time.Time, error) {
		var now time.Time
		if _, err := one(q, scanInto(new(int)), pingSQL); err != nil {
			return now, err
		}
		_, err := one(q, scanInto(At(&now)), s.b.Dialect().Now)
		return now, err
	})
}
