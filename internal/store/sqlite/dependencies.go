package sqlite

import (
	"database/sql"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/store/engine"
)

// waitingRunAfter is the run_after of a task waiting on dependencies
// (9999-12-31T23:59:59.999Z): no promotion reaches it, and the claim index
// leaves it out (see the migration "dependencies").
const waitingRunAfter = 253402300799999

// MarkDependencies reads the named tasks and marks the live ones as
// depended on; the write transaction is the lock.
func (t *txn) MarkDependencies(ids []string) (map[string]engine.DependencyRow, error) {
	list := jsonArg(ids)
	if err := t.exec(`UPDATE task_queue SET has_dependents = 1
		WHERE id IN (SELECT value FROM json_each(?)) AND has_dependents = 0`, list); err != nil {
		return nil, err
	}
	rows, err := t.tx.QueryContext(t.ctx, `SELECT t.id, t.tenant, coalesce(q.state, r.state)
		FROM tasks t LEFT JOIN task_queue q ON q.id = t.id LEFT JOIN task_results r ON r.task_id = t.id
		WHERE t.id IN (SELECT value FROM json_each(?))`, list)
	if err != nil {
		return nil, err
	}
	type found struct {
		id string
		engine.DependencyRow
	}
	got, err := collect(rows, func(r *sql.Rows) (found, error) {
		var f found
		var state string
		err := r.Scan(&f.id, &f.Tenant, &state)
		f.State = dockettype.State(state)
		return f, err
	})
	out := make(map[string]engine.DependencyRow, len(got))
	for _, f := range got {
		out[f.id] = f.DependencyRow
	}
	return out, err
}

// InsertDependencies writes the edges and makes the waiting tasks wait.
func (t *txn) InsertDependencies(edges []engine.Edge, waits []engine.Wait, depended []string) error {
	rows := make([][]any, len(edges))
	for i, e := range edges {
		rows[i] = []any{e.DependsOn, e.TaskID, e.Ord}
	}
	if err := t.insertRows("INSERT INTO task_dependencies (depends_on, task_id, ord)", "", 3, rows); err != nil {
		return err
	}
	if len(waits) > 0 {
		list := make([][]any, len(waits))
		for i, w := range waits {
			list[i] = []any{w.TaskID, w.Pending, b2i(w.Run)}
		}
		if err := t.exec(`UPDATE task_queue AS q SET deps_pending = u.pending, deps_run = u.run, run_after = ?2
			FROM (SELECT value->>0 AS id, value->>1 AS pending, value->>2 AS run FROM json_each(?1)) AS u
			WHERE q.id = u.id`, jsonArg(list), waitingRunAfter); err != nil {
			return err
		}
	}
	if len(depended) == 0 {
		return nil
	}
	return t.exec("UPDATE task_queue SET has_dependents = 1 WHERE id IN (SELECT value FROM json_each(?))", jsonArg(depended))
}

// Dependents reads the waiting dependents of tasks.
func (t *txn) Dependents(ids []string) ([]engine.Dependent, error) {
	rows, err := t.tx.QueryContext(t.ctx, `SELECT d.task_id, d.depends_on, q.lease_epoch, q.deps_run
		FROM json_each(?) j JOIN task_dependencies d ON d.depends_on = j.value
			JOIN task_queue q ON q.id = d.task_id
		WHERE q.state = 'queued' AND q.deps_pending > 0
		ORDER BY d.task_id`, jsonArg(ids))
	if err != nil {
		return nil, err
	}
	return collect(rows, func(r *sql.Rows) (engine.Dependent, error) {
		var d engine.Dependent
		err := r.Scan(&d.TaskID, &d.DependsOn, &d.Epoch, &d.Run)
		return d, err
	})
}

// Release lowers pending counts; a task at zero gets its run_at or none.
func (t *txn) Release(rows []engine.Release, now time.Time) ([]engine.Moved, error) {
	list := make([][]any, len(rows))
	for i, r := range rows {
		list[i] = []any{r.TaskID, r.N}
	}
	// A task with a concurrency key stays held at zero: it waits on its
	// key, and the engine gives it a free slot in this transaction.
	res, err := t.tx.QueryContext(t.ctx, `UPDATE task_queue AS q SET deps_pending = max(q.deps_pending - u.n, 0),
			run_after = CASE WHEN q.deps_pending - u.n > 0 THEN q.run_after
				WHEN q.concurrency_key IS NOT NULL THEN ?3
				ELSE (SELECT CASE WHEN t.run_at > ?2 THEN t.run_at END FROM tasks t WHERE t.id = q.id) END
		FROM (SELECT value->>0 AS id, value->>1 AS n FROM json_each(?1)) AS u
		WHERE q.id = u.id AND q.state = 'queued' AND q.deps_pending > 0
		RETURNING id, tenant, queue, 'queued', lease_epoch, run_after IS NULL, deps_pending = 0,
			workflow, coalesce(concurrency_key, '')`, jsonArg(list), ms(now), ms(engine.HeldUntil))
	if err != nil {
		return nil, err
	}
	type released struct {
		engine.Moved
		done bool
	}
	got, err := collect(res, func(r *sql.Rows) (released, error) {
		var m released
		var queue, from string
		err := r.Scan(&m.TaskID, &m.Tenant, &queue, &from, &m.Epoch, &m.Ready, &m.done, &m.Workflow, &m.Key)
		m.Queue, m.From = store.Queue(queue), dockettype.State(from)
		return m, err
	})
	var out []engine.Moved
	for _, m := range got {
		if m.done {
			out = append(out, m.Moved)
		}
	}
	return out, err
}
