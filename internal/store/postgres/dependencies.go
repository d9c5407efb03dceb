package postgres

import (
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/store/engine"
)

// waitingRunAfter is the run_after of a task waiting on dependencies: no
// promotion reaches it, and the claim index leaves it out (see the
// migration "dependencies").
var waitingRunAfter = time.Date(9999, 12, 31, 23, 59, 59, 999e6, time.UTC)

// MarkDependencies locks the named live tasks in ID order, marks them as
// depended on, then reads every named task: a transaction that ended one
// of them meanwhile has committed (the lock waited for it), so its result
// row is there to read.
func (t *txn) MarkDependencies(ids []string) (map[string]engine.DependencyRow, error) {
	t.later(lockLiveSQL, ids)
	t.later("UPDATE task_queue SET has_dependents = true WHERE id = ANY($1) AND NOT has_dependents", ids)
	rows, err := t.query(`SELECT t.id, t.tenant, coalesce(q.state, r.state)
		FROM tasks t LEFT JOIN task_queue q ON q.id = t.id LEFT JOIN task_results r ON r.task_id = t.id
		WHERE t.id = ANY($1)`, ids)
	if err != nil {
		return nil, err
	}
	out := map[string]engine.DependencyRow{}
	var id, tenant, state string
	_, err = pgx.ForEachRow(rows, []any{&id, &tenant, &state}, func() error {
		out[id] = engine.DependencyRow{Tenant: tenant, State: dockettype.State(state)}
		return nil
	})
	return out, err
}

// InsertDependencies writes the edges and makes the waiting tasks wait.
func (t *txn) InsertDependencies(edges []engine.Edge, waits []engine.Wait, depended []string) error {
	deps, ids, ords := make([]string, len(edges)), make([]string, len(edges)), make([]int32, len(edges))
	for i, e := range edges {
		deps[i], ids[i], ords[i] = e.DependsOn, e.TaskID, int32(e.Ord)
	}
	t.later(`INSERT INTO task_dependencies (depends_on, task_id, ord)
		SELECT * FROM unnest($1::text[], $2::text[], $3::int[])`, deps, ids, ords)
	if len(waits) > 0 {
		wids, pending, run := make([]string, len(waits)), make([]int32, len(waits)), make([]bool, len(waits))
		for i, w := range waits {
			wids[i], pending[i], run[i] = w.TaskID, int32(w.Pending), w.Run
		}
		t.later(`UPDATE task_queue q SET deps_pending = u.pending, deps_run = u.run, run_after = $4
			FROM unnest($1::text[], $2::int[], $3::bool[]) AS u (id, pending, run)
			WHERE q.id = ANY($1) AND q.id = u.id`, wids, pending, run, waitingRunAfter)
	}
	if len(depended) > 0 {
		t.later("UPDATE task_queue SET has_dependents = true WHERE id = ANY($1)", depended)
	}
	return nil
}

// Dependents reads and locks, in task ID order, the waiting dependents of
// tasks.
func (t *txn) Dependents(ids []string) ([]engine.Dependent, error) {
	rows, err := t.query(`SELECT d.task_id, d.depends_on, q.lease_epoch, q.deps_run
		FROM task_dependencies d JOIN task_queue q ON q.id = d.task_id
		WHERE d.depends_on = ANY($1) AND q.state = 'queued' AND q.deps_pending > 0
		ORDER BY d.task_id FOR UPDATE OF q`, ids)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (engine.Dependent, error) {
		var d engine.Dependent
		err := r.Scan(&d.TaskID, &d.DependsOn, &d.Epoch, &d.Run)
		return d, err
	})
}

// Release lowers pending counts; a task at zero gets its run_at or none.
func (t *txn) Release(rows []engine.Release, now time.Time) ([]engine.Moved, error) {
	ids, ns := make([]string, len(rows)), make([]int32, len(rows))
	for i, r := range rows {
		ids[i], ns[i] = r.TaskID, int32(r.N)
	}
	// A task with a concurrency key stays held at zero: it waits on its
	// key, and the engine gives it a free slot in this transaction.
	res, err := t.query(`UPDATE task_queue q SET deps_pending = GREATEST(q.deps_pending - u.n, 0),
			run_after = CASE WHEN q.deps_pending - u.n > 0 THEN q.run_after
				WHEN q.concurrency_key IS NOT NULL THEN $4::timestamptz
				WHEN t.run_at > $3 THEN t.run_at END
		FROM unnest($1::text[], $2::int[]) AS u (id, n), tasks t
		WHERE q.id = ANY($1) AND q.id = u.id AND t.id = q.id AND q.state = 'queued' AND q.deps_pending > 0
		RETURNING q.id, q.tenant, q.queue, 'queued', q.lease_epoch, q.run_after IS NULL, q.deps_pending = 0,
			q.workflow, coalesce(q.concurrency_key, '')`,
		ids, ns, ts(now), ts(engine.HeldUntil))
	if err != nil {
		return nil, err
	}
	var out []engine.Moved
	var m engine.Moved
	var queue, from string
	var done bool
	_, err = pgx.ForEachRow(res, []any{&m.TaskID, &m.Tenant, &queue, &from, &m.Epoch, &m.Ready, &done, &m.Workflow, &m.Key}, func() error {
		if done {
			m.Queue, m.From = store.Queue(queue), dockettype.State(from)
			out = append(out, m)
		}
		return nil
	})
	return out, err
}
