package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"strings"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/store/engine"
	"github.com/docket-dev/docket/internal/store/fairshare"
)

var _ engine.Tx = (*txn)(nil)

// txn runs the engine's steps in one SQLite write transaction. Lists of
// keys go in as one JSON array (json_each), so each statement's text is the
// same whatever the batch size and stays in the statement cache; rows that
// carry payloads go in as multi-row VALUES.
type txn struct {
	ctx   context.Context
	tx    *wtx
	notes []store.Notification // delivered in process after the commit
}

// jsonArg encodes v (a slice) as the JSON text json_each reads.
func jsonArg(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // slices of strings and numbers always encode
	}
	return string(b)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (t *txn) exec(query string, args ...any) error {
	_, err := t.tx.ExecContext(t.ctx, query, args...)
	return err
}

// rowsChunk bounds multi-row VALUES statements (SQLite allows 32,766
// parameters per statement).
const rowsChunk = 64

// insertRows runs "prefix VALUES (?,…),(?,…) suffix" over rows in chunks.
func (t *txn) insertRows(prefix, suffix string, width int, rows [][]any) error {
	row := "(" + strings.TrimSuffix(strings.Repeat("?,", width), ",") + ")"
	for len(rows) > 0 {
		n := min(len(rows), rowsChunk)
		var q strings.Builder
		q.WriteString(prefix + " VALUES ")
		args := make([]any, 0, n*width)
		for i, r := range rows[:n] {
			if i > 0 {
				q.WriteByte(',')
			}
			q.WriteString(row)
			args = append(args, r...)
		}
		q.WriteString(" " + suffix)
		if err := t.exec(q.String(), args...); err != nil {
			return err
		}
		rows = rows[n:]
	}
	return nil
}

// collect scans each of rows and closes them (see engine.Collect).
func collect[T any](rows *sql.Rows, scan func(*sql.Rows) (T, error)) ([]T, error) {
	return engine.Collect(sqlRows{rows}, func(engine.Row) (T, error) { return scan(rows) })
}

func scanString(r *sql.Rows) (string, error) {
	var s string
	err := r.Scan(&s)
	return s, err
}

// Bindings reads the existing bindings among keys.
func (t *txn) Bindings(keys []engine.TenantKey) (map[engine.TenantKey]engine.Binding, error) {
	pairs := make([][2]string, len(keys))
	for i, k := range keys {
		pairs[i] = [2]string{k.Tenant, k.Key}
	}
	rows, err := t.tx.QueryContext(t.ctx, `SELECT b.tenant, b.key, b.request_hash, b.task_id
		FROM json_each(?) j JOIN idempotency_keys b ON b.tenant = j.value->>0 AND b.key = j.value->>1`, jsonArg(pairs))
	if err != nil {
		return nil, err
	}
	found, err := collect(rows, func(r *sql.Rows) (engine.Binding, error) {
		var b engine.Binding
		err := r.Scan(&b.Tenant, &b.Key, &b.RequestHash, &b.TaskID)
		return b, err
	})
	out := make(map[engine.TenantKey]engine.Binding, len(found))
	for _, b := range found {
		out[b.TenantKey] = b
	}
	return out, err
}

// EnsureTenants creates missing tenants and their gate rows.
func (t *txn) EnsureTenants(ids []string, limit int, now time.Time) error {
	if err := t.exec(`INSERT INTO tenants (id, max_in_flight, created_at) SELECT value, ?, ? FROM json_each(?) WHERE true
		ON CONFLICT DO NOTHING`, limit, ms(now), jsonArg(ids)); err != nil {
		return err
	}
	return t.exec(`INSERT INTO counters (scope, key, slot) SELECT 'tenant', value, 0 FROM json_each(?) WHERE true
		ON CONFLICT DO NOTHING`, jsonArg(ids))
}

// LockGates reads the counts, stored bytes and limits; the write
// transaction is the lock (SQLite has one writer).
func (t *txn) LockGates(pools []dockettype.Pool, tenants []string) (*engine.Gates, error) {
	g := &engine.Gates{Pools: map[dockettype.Pool]int64{}, Tenants: map[string]engine.TenantGate{}}
	rows, err := t.tx.QueryContext(t.ctx, `SELECT c.scope, c.key, sum(c.n), sum(c.bytes), 0, 0 FROM counters c
		WHERE (c.scope = 'pool' AND c.key IN (SELECT value FROM json_each(?1)))
			OR (c.scope = 'tenant' AND c.key IN (SELECT value FROM json_each(?2)))
		GROUP BY c.scope, c.key
		UNION ALL
		SELECT 'limit', id, 0, 0, max_in_flight, coalesce(storage_quota_bytes, -1) FROM tenants
		WHERE id IN (SELECT value FROM json_each(?2))
		UNION ALL
		`+engine.RefusingGatesSQL, jsonArg(pools), jsonArg(tenants))
	if err != nil {
		return nil, err
	}
	type count struct {
		scope, key   string
		n, bytes     int64
		limit, quota int64
	}
	counts, err := collect(rows, func(r *sql.Rows) (count, error) {
		var c count
		err := r.Scan(&c.scope, &c.key, &c.n, &c.bytes, &c.limit, &c.quota)
		return c, err
	})
	if err != nil {
		return nil, err
	}
	for _, c := range counts {
		g.AddRow(c.scope, c.key, c.n, c.bytes, int(c.limit), c.quota)
	}
	return g, nil
}

// InsertBindings inserts bindings, skipping keys already bound.
func (t *txn) InsertBindings(rows []engine.Binding, now time.Time) (map[engine.TenantKey]bool, error) {
	out := make(map[engine.TenantKey]bool, len(rows))
	for _, r := range rows {
		res, err := t.tx.ExecContext(t.ctx, `INSERT INTO idempotency_keys (tenant, key, request_hash, task_id, created_at)
			VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`, r.Tenant, r.Key, r.RequestHash, r.TaskID, ms(now))
		if err != nil {
			return nil, err
		}
		if n, err := res.RowsAffected(); err != nil {
			return nil, err
		} else if n == 1 {
			out[r.TenantKey] = true
		}
	}
	return out, nil
}

// InsertTasks writes the immutable task rows and their live rows.
func (t *txn) InsertTasks(items []*store.AdmitItem, held map[string]bool, now time.Time) error {
	nowMS := ms(now)
	tasks := make([][]any, len(items))
	live := make([][]any, len(items))
	for i, it := range items {
		var runAt, runAfter any
		if !it.RunAt.IsZero() {
			runAt = ms(it.RunAt)
			if it.RunAt.After(now) {
				runAfter = ms(it.RunAt)
			}
		}
		input := it.Input
		if input == nil {
			input = []byte("null")
		}
		var key any
		slot := 0
		if it.ConcurrencyKey != "" {
			key = it.ConcurrencyKey
			if held[it.TaskID] {
				runAfter = ms(engine.HeldUntil)
			} else {
				slot = 1
			}
		}
		tasks[i] = []any{it.TaskID, it.Tenant, it.IdempotencyKey, it.Author, it.Workflow, string(it.Pool), it.Priority,
			it.MaxAttempts, ms(it.DeadlineAt), runAt, nowMS, it.TraceID, it.ConfigVersion, input, key, b2i(!it.TraceUnsampled)}
		live[i] = []any{it.TaskID, it.Tenant, string(it.QueueOf()), it.Priority, "queued", it.MaxAttempts, runAfter, ms(it.DeadlineAt), nowMS,
			it.Workflow, key, slot}
	}
	if err := t.insertRows(`INSERT INTO tasks (id, tenant, idempotency_key, author, workflow, pool, priority, max_attempts,
		deadline_at, run_at, created_at, trace_id, config_version, input, concurrency_key, trace_sampled)`, "", 16, tasks); err != nil {
		return err
	}
	return t.insertRows(`INSERT INTO task_queue (id, tenant, queue, priority, state, max_attempts, run_after, deadline_at, created_at,
		workflow, concurrency_key, key_slot)`, "", 12, live)
}

// ReadTasks reads tasks by ID, with their results.
func (t *txn) ReadTasks(ids []string) (map[string]*dockettype.Task, error) {
	rows, err := t.tx.QueryContext(t.ctx, engine.TaskSelect(true)+" WHERE t.id IN (SELECT value FROM json_each(?))", jsonArg(ids))
	if err != nil {
		return nil, err
	}
	tasks, err := collect(rows, func(r *sql.Rows) (*dockettype.Task, error) { return engine.ScanTask(r) })
	out := make(map[string]*dockettype.Task, len(tasks))
	for _, task := range tasks {
		out[task.ID] = task
	}
	return out, err
}

// PromoteDue makes due delayed tasks ready and reads the flow rules that
// pause or rate-limit anything.
func (t *txn) PromoteDue(queue store.Queue, now time.Time, limit int) ([]string, []store.FlowRule, error) {
	rows, err := t.tx.QueryContext(t.ctx, `UPDATE task_queue SET run_after = NULL
		WHERE id IN (SELECT id FROM task_queue
			WHERE queue = ? AND state = 'queued' AND run_after IS NOT NULL AND run_after <= ?
			ORDER BY run_after LIMIT ?)
		RETURNING tenant`, string(queue), ms(now), limit)
	if err != nil {
		return nil, nil, err
	}
	due, err := collect(rows, scanString)
	if err != nil {
		return nil, nil, err
	}
	rows, err = t.tx.QueryContext(t.ctx, `SELECT scope, key, paused, coalesce(rate_per_second, 0), burst, throttled_at
		FROM flow_rules WHERE paused OR rate_per_second IS NOT NULL`)
	if err != nil {
		return nil, nil, err
	}
	rules, err := collect(rows, func(r *sql.Rows) (store.FlowRule, error) {
		var f store.FlowRule
		var at sql.NullInt64
		err := r.Scan(&f.Scope, &f.Key, &f.Paused, &f.RatePerSecond, &f.Burst, &at)
		if at.Valid {
			a := time.UnixMilli(at.Int64).UTC()
			f.ThrottledAt = &a
		}
		return f, err
	})
	return due, rules, err
}

// ReadyTenants reads the tenants with ready work, lowest virtual time first.
func (t *txn) ReadyTenants(queue store.Queue, tenant string, limit int, except []string) ([]fairshare.Tenant, error) {
	var rows *sql.Rows
	var err error
	if len(except) == 0 {
		rows, err = t.tx.QueryContext(t.ctx, `SELECT q.tenant, q.queued, q.vtime, coalesce(tn.weight, 1)
			FROM tenant_queues q LEFT JOIN tenants tn ON tn.id = q.tenant
			WHERE q.queue = ?1 AND q.queued > 0 AND (?3 = '' OR q.tenant = ?3)
			ORDER BY q.vtime, q.tenant LIMIT ?2`, string(queue), limit, tenant)
	} else {
		rows, err = t.tx.QueryContext(t.ctx, `SELECT q.tenant, q.queued, q.vtime, coalesce(tn.weight, 1)
			FROM tenant_queues q LEFT JOIN tenants tn ON tn.id = q.tenant
			WHERE q.queue = ?1 AND q.queued > 0 AND (?3 = '' OR q.tenant = ?3)
				AND q.tenant NOT IN (SELECT value FROM json_each(?4))
			ORDER BY q.vtime, q.tenant LIMIT ?2`, string(queue), limit, tenant, jsonArg(except))
	}
	if err != nil {
		return nil, err
	}
	return collect(rows, func(r *sql.Rows) (fairshare.Tenant, error) {
		var ft fairshare.Tenant
		err := r.Scan(&ft.ID, &ft.Queued, &ft.VTime, &ft.Weight)
		return ft, err
	})
}

// Take claims each granted tenant's first ready tasks: their IDs from the
// claim index, one update for all, then the tasks with their input.
func (t *txn) Take(queue store.Queue, grants []fairshare.Grant, owner string, expires, now time.Time) ([][]*store.ClaimedTask, error) {
	var ids []string
	tenantOf := map[string]int{}
	for i, g := range grants {
		rows, err := t.tx.QueryContext(t.ctx, `SELECT id FROM task_queue
			WHERE queue = ? AND tenant = ? AND state = 'queued' AND run_after IS NULL
			ORDER BY priority DESC, id LIMIT ?`, string(queue), g.Tenant, g.Count)
		if err != nil {
			return nil, err
		}
		got, err := collect(rows, scanString)
		if err != nil {
			return nil, err
		}
		for _, id := range got {
			tenantOf[id] = i
		}
		ids = append(ids, got...)
	}
	out := make([][]*store.ClaimedTask, len(grants))
	if len(ids) == 0 {
		return out, nil
	}
	list := jsonArg(ids)
	if err := t.exec(`UPDATE task_queue SET state = 'running', attempt = attempt + 1, lease_epoch = lease_epoch + 1,
			lease_owner = ?, lease_expires_at = ?, started_at = coalesce(started_at, ?)
		WHERE id IN (SELECT value FROM json_each(?))`, owner, ms(expires), ms(now), list); err != nil {
		return nil, err
	}
	rows, err := t.tx.QueryContext(t.ctx, `SELECT `+engine.TaskColumns+`, t.input, NOT t.trace_sampled
		FROM task_queue q JOIN tasks t ON t.id = q.id LEFT JOIN task_results r ON r.task_id = q.id
		WHERE q.id IN (SELECT value FROM json_each(?))`, list)
	if err != nil {
		return nil, err
	}
	claimed, err := collect(rows, func(r *sql.Rows) (*store.ClaimedTask, error) {
		c := &store.ClaimedTask{}
		var err error
		c.Task, err = engine.ScanTask(r, &c.Input, &c.TraceUnsampled)
		return c, err
	})
	for _, c := range claimed {
		i := tenantOf[c.Task.ID]
		out[i] = append(out[i], c)
	}
	return out, err
}

// SetTenantQueues applies the claim's charges and ready counts.
func (t *txn) SetTenantQueues(queue store.Queue, rows []engine.TenantQueue) error {
	for _, r := range rows {
		if err := t.exec(`UPDATE tenant_queues SET vtime = vtime + ?, queued = max(queued - ?, 0)
			WHERE queue = ? AND tenant = ?`, r.Charge, r.Taken, string(queue), r.Tenant); err != nil {
			return err
		}
	}
	return nil
}

// LockLive does nothing: SQLite's one write transaction holds every row.
func (t *txn) LockLive([]string) error { return nil }

// End deletes the live rows that still match and writes their results.
func (t *txn) End(rows []engine.End, now time.Time) ([]engine.Moved, error) {
	match := make([][]any, len(rows))
	byID := make(map[string]engine.End, len(rows))
	for i, r := range rows {
		match[i] = []any{r.TaskID, r.Epoch, string(r.From), b2i(r.DeadlineDue), b2i(r.LeaseDue)}
		byID[r.TaskID] = r
	}
	nowMS := ms(now)
	// The subquery drives from the list and probes the primary key.
	res, err := t.tx.QueryContext(t.ctx, `DELETE FROM task_queue WHERE id IN (
			SELECT q.id FROM json_each(?1) j JOIN task_queue q ON q.id = j.value->>0
			WHERE j.value->>1 = q.lease_epoch AND (j.value->>2 = '' OR j.value->>2 = q.state)
				AND (j.value->>3 = 0 OR q.deadline_at <= ?2) AND (j.value->>4 = 0 OR q.lease_expires_at <= ?2))
		RETURNING id, tenant, queue, state, attempt, lease_epoch, started_at, state = 'queued' AND run_after IS NULL,
			has_dependents, workflow, coalesce(concurrency_key, ''), key_slot`,
		jsonArg(match), nowMS)
	if err != nil {
		return nil, err
	}
	type gone struct {
		engine.Moved
		attempt int
		started sql.NullInt64
	}
	deleted, err := collect(res, func(r *sql.Rows) (gone, error) {
		var g gone
		var queue, from string
		err := r.Scan(&g.TaskID, &g.Tenant, &queue, &from, &g.attempt, &g.Epoch, &g.started, &g.Ready, &g.HasDependents,
			&g.Workflow, &g.Key, &g.KeySlot)
		g.Queue, g.From = store.Queue(queue), dockettype.State(from)
		return g, err
	})
	if err != nil || len(deleted) == 0 {
		return nil, err
	}
	results := make([][]any, len(deleted))
	moved := make([]engine.Moved, len(deleted))
	for i, g := range deleted {
		e := byID[g.TaskID]
		if e.BumpEpoch {
			g.Epoch++
		}
		results[i] = []any{g.TaskID, g.Tenant, string(e.To), g.attempt, g.Epoch, g.started, nowMS, e.Result,
			nullString(string(e.Code)), nullString(e.Message)}
		moved[i] = g.Moved
	}
	return moved, t.insertRows(`INSERT INTO task_results (task_id, tenant, state, attempt, lease_epoch, started_at,
		finished_at, result, error_code, error_message)`, "", 10, results)
}

// Requeue moves running tasks that still match back to queued.
func (t *txn) Requeue(rows []engine.Requeue, now time.Time) ([]engine.Moved, error) {
	list := make([][]any, len(rows))
	for i, r := range rows {
		var runAfter any
		if !r.RunAfter.IsZero() {
			runAfter = ms(r.RunAfter)
		}
		list[i] = []any{r.TaskID, r.Epoch, b2i(r.BumpEpoch), b2i(r.Uncharge), runAfter, string(r.Code), r.Message, b2i(r.LeaseDue)}
	}
	res, err := t.tx.QueryContext(t.ctx, `UPDATE task_queue AS q SET state = 'queued',
			attempt = q.attempt - u.uncharge, lease_epoch = q.lease_epoch + u.bump,
			lease_owner = NULL, lease_expires_at = NULL, run_after = u.run_after,
			error_code = CASE WHEN u.uncharge THEN q.error_code ELSE nullif(u.code, '') END,
			error_message = CASE WHEN u.uncharge THEN q.error_message ELSE nullif(u.message, '') END
		FROM (SELECT value->>0 AS id, value->>1 AS epoch, value->>2 AS bump, value->>3 AS uncharge,
				value->>4 AS run_after, value->>5 AS code, value->>6 AS message, value->>7 AS lease_due
			FROM json_each(?1)) AS u
		WHERE q.id = u.id AND q.lease_epoch = u.epoch AND q.state = 'running'
			AND (u.lease_due = 0 OR q.lease_expires_at <= ?2)
		RETURNING id, tenant, queue, 'running', lease_epoch, run_after IS NULL, workflow, coalesce(concurrency_key, ''), key_slot`,
		jsonArg(list), ms(now))
	if err != nil {
		return nil, err
	}
	return collect(res, scanMoved)
}

func scanMoved(r *sql.Rows) (engine.Moved, error) {
	var m engine.Moved
	var queue, from string
	err := r.Scan(&m.TaskID, &m.Tenant, &queue, &from, &m.Epoch, &m.Ready, &m.Workflow, &m.Key, &m.KeySlot)
	m.Queue, m.From = store.Queue(queue), dockettype.State(from)
	return m, err
}

// States reads the current state of tasks, live or finished.
func (t *txn) States(ids []string) (map[string]dockettype.State, error) {
	list := jsonArg(ids)
	rows, err := t.tx.QueryContext(t.ctx, `SELECT id, state FROM task_queue WHERE id IN (SELECT value FROM json_each(?1))
		UNION ALL SELECT task_id, state FROM task_results WHERE task_id IN (SELECT value FROM json_each(?1))`, list)
	if err != nil {
		return nil, err
	}
	type idState struct{ id, state string }
	found, err := collect(rows, func(r *sql.Rows) (idState, error) {
		var s idState
		err := r.Scan(&s.id, &s.state)
		return s, err
	})
	out := make(map[string]dockettype.State, len(found))
	for _, s := range found {
		out[s.id] = dockettype.State(s.state)
	}
	return out, err
}

// Renew extends the leases still held.
func (t *txn) Renew(leases []store.Lease, expires time.Time) ([]store.Lease, error) {
	list := make([][]any, len(leases))
	for i, l := range leases {
		list[i] = []any{l.TaskID, l.Epoch}
	}
	rows, err := t.tx.QueryContext(t.ctx, `UPDATE task_queue AS q SET lease_expires_at = ?
		FROM (SELECT value->>0 AS id, value->>1 AS epoch FROM json_each(?)) AS l
		WHERE q.id = l.id AND q.lease_epoch = l.epoch AND q.state = 'running'
		RETURNING id, lease_epoch`, ms(expires), jsonArg(list))
	if err != nil {
		return nil, err
	}
	return collect(rows, func(r *sql.Rows) (store.Lease, error) {
		var l store.Lease
		err := r.Scan(&l.TaskID, &l.Epoch)
		return l, err
	})
}

// LeaseAttempt reads the attempt of a task running under lease.
func (t *txn) LeaseAttempt(lease store.Lease) (int, string, bool, error) {
	var attempt int
	var tenant string
	err := t.tx.QueryRowContext(t.ctx, "SELECT attempt, tenant FROM task_queue WHERE id = ? AND lease_epoch = ? AND state = 'running'",
		lease.TaskID, lease.Epoch).Scan(&attempt, &tenant)
	if err == sql.ErrNoRows {
		return 0, "", false, nil
	}
	return attempt, tenant, err == nil, err
}

// InsertEvidence records evidence items.
func (t *txn) InsertEvidence(lease store.Lease, attempt int, items []store.EvidenceItem, now time.Time) error {
	rows := make([][]any, len(items))
	for i, it := range items {
		rows[i] = []any{lease.TaskID, attempt, lease.Epoch, it.Kind, it.Body, ms(now)}
	}
	return t.insertRows("INSERT INTO evidence (task_id, attempt, epoch, kind, body, created_at)", "", 6, rows)
}

// LockLiveTasks reads the live tasks among ids (the write transaction
// holds the database: no row lock to take).
func (t *txn) LockLiveTasks(ids []string) (map[string]engine.TaskState, error) {
	return t.taskStates("SELECT id, tenant, state, lease_epoch FROM task_queue WHERE id IN (SELECT value FROM json_each(?1))", ids)
}

// FinishedTasks reads the terminal tasks among ids.
func (t *txn) FinishedTasks(ids []string) (map[string]engine.TaskState, error) {
	return t.taskStates("SELECT task_id, tenant, state, lease_epoch FROM task_results WHERE task_id IN (SELECT value FROM json_each(?1))", ids)
}

func (t *txn) taskStates(query string, ids []string) (map[string]engine.TaskState, error) {
	rows, err := t.tx.QueryContext(t.ctx, query, jsonArg(ids))
	if err != nil {
		return nil, err
	}
	type row struct {
		id string
		ts engine.TaskState
	}
	found, err := collect(rows, func(r *sql.Rows) (row, error) {
		var x row
		err := r.Scan(&x.id, &x.ts.Tenant, &x.ts.State, &x.ts.Epoch)
		return x, err
	})
	out := make(map[string]engine.TaskState, len(found))
	for _, x := range found {
		out[x.id] = x.ts
	}
	return out, err
}

// FinishedBefore reads the oldest results from the front of the table.
func (t *txn) FinishedBefore(before time.Time, limit int) ([]string, error) {
	// A task a live task depends on stays: its dependent reads its result.
	rows, err := t.tx.QueryContext(t.ctx, `SELECT task_id FROM task_results r WHERE finished_at < ?
			AND NOT EXISTS (SELECT 1 FROM task_dependencies d JOIN task_queue q ON q.id = d.task_id WHERE d.depends_on = r.task_id)
		ORDER BY rowid LIMIT ?`,
		ms(before), limit)
	if err != nil {
		return nil, err
	}
	return collect(rows, scanString)
}

// DeleteTasks deletes finished tasks with everything they own. The guard
// row lets this one transaction delete history.
func (t *txn) DeleteTasks(ids []string) (map[string]int64, error) {
	list := jsonArg(ids)
	rows, err := t.tx.QueryContext(t.ctx, deletedBytesSQL, list)
	if err != nil {
		return nil, err
	}
	freed := map[string]int64{}
	var tenant string
	var n int64
	for rows.Next() {
		if err := rows.Scan(&tenant, &n); err != nil {
			rows.Close()
			return nil, err
		}
		freed[tenant] = n
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	for _, q := range []string{
		"UPDATE retention_guard SET deleting = 1",
		`DELETE FROM idempotency_keys WHERE (tenant, key) IN (
			SELECT t.tenant, t.idempotency_key FROM tasks t WHERE t.id IN (SELECT value FROM json_each(?1)))
			AND task_id IN (SELECT value FROM json_each(?1))`,
		"DELETE FROM task_events WHERE task_id IN (SELECT value FROM json_each(?1))",
		"DELETE FROM evidence WHERE task_id IN (SELECT value FROM json_each(?1))",
		"DELETE FROM task_dependencies WHERE task_id IN (SELECT value FROM json_each(?1))",
		"DELETE FROM task_results WHERE task_id IN (SELECT value FROM json_each(?1))",
		`DELETE FROM tasks WHERE id IN (SELECT value FROM json_each(?1))
			AND NOT EXISTS (SELECT 1 FROM task_queue q WHERE q.id = tasks.id)`,
		"UPDATE retention_guard SET deleting = 0",
	} {
		var args []any
		if strings.Contains(q, "?1") {
			args = []any{list}
		}
		if err := t.exec(q, args...); err != nil {
			return nil, err
		}
	}
	return freed, nil
}

// deletedBytesSQL sums, per tenant, the bytes DeleteTasks deletes among
// ?1: the inputs of the tasks it deletes, their results and evidence.
const deletedBytesSQL = `SELECT tenant, sum(n) FROM (
		SELECT tenant, length(CAST(input AS BLOB)) AS n FROM tasks WHERE id IN (SELECT value FROM json_each(?1))
			AND NOT EXISTS (SELECT 1 FROM task_queue q WHERE q.id = tasks.id)
		UNION ALL
		SELECT tenant, coalesce(length(CAST(result AS BLOB)), 0) FROM task_results WHERE task_id IN (SELECT value FROM json_each(?1))
		UNION ALL
		SELECT t.tenant, length(CAST(e.body AS BLOB)) FROM evidence e JOIN tasks t ON t.id = e.task_id
			WHERE e.task_id IN (SELECT value FROM json_each(?1)))
	GROUP BY tenant`

// AddInFlight adds to counters (in-flight counts and stored bytes): slot 0
// for admission, slot 1 for everything else.
func (t *txn) AddInFlight(deltas []engine.CounterDelta, release bool) error {
	slot := b2i(release)
	for _, d := range deltas {
		if err := t.exec(`INSERT INTO counters (scope, key, slot, n, bytes) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (scope, key, slot) DO UPDATE SET n = n + excluded.n, bytes = bytes + excluded.bytes`,
			d.Scope, d.Key, slot, d.N, d.Bytes); err != nil {
			return err
		}
	}
	return nil
}

// AddQueued changes ready counts; see engine.Tx.
func (t *txn) AddQueued(deltas []engine.QueueDelta) error {
	for _, d := range deltas {
		var err error
		if d.N > 0 {
			err = t.exec(`INSERT INTO tenant_queues (queue, tenant, queued, vtime)
				VALUES (?1, ?2, ?3, coalesce(
					(SELECT min(a.vtime) FROM tenant_queues a WHERE a.queue = ?1 AND a.queued > 0),
					(SELECT max(a.vtime) FROM tenant_queues a WHERE a.queue = ?1), 0))
				ON CONFLICT (queue, tenant) DO UPDATE SET
					vtime = CASE WHEN queued = 0 THEN max(vtime, excluded.vtime) ELSE vtime END,
					queued = queued + excluded.queued`, string(d.Queue), d.Tenant, d.N)
		} else {
			err = t.exec("UPDATE tenant_queues SET queued = max(queued + ?, 0) WHERE queue = ? AND tenant = ?",
				d.N, string(d.Queue), d.Tenant)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// InsertEvents appends history rows in order.
func (t *txn) InsertEvents(events []engine.Event, now time.Time) error {
	rows := make([][]any, len(events))
	nowMS := ms(now)
	for i, e := range events {
		rows[i] = []any{e.TaskID, string(e.From), string(e.To), e.Epoch, string(e.Code), nowMS, e.By.KeyID, string(e.By.Role)}
	}
	return t.insertRows("INSERT INTO task_events (task_id, from_state, to_state, epoch, code, at, actor_key, actor_role)", "", 8, rows)
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// Notify keeps the notifications for this process's listeners, delivered
// when the transaction commits (see localNotes): an SQLite database has
// one node.
func (t *txn) Notify(ready []store.Queue, finished []string) error {
	for _, q := range ready {
		t.notes = append(t.notes, store.Notification{Ready: q})
	}
	if len(finished) > 0 {
		t.notes = append(t.notes, store.Notification{Finished: finished})
	}
	return nil
}

// Revive makes retryable terminal tasks live again: their result rows go,
// and their live rows are queued and ready (attempt 0, the result's
// epoch+1, the original timeout from now), with the bytes of the results
// deleted.
func (t *txn) Revive(rows []engine.Revive, now time.Time) ([]engine.Moved, error) {
	queues := make(map[string]string, len(rows))
	list := make([][2]string, len(rows))
	for i, r := range rows {
		list[i], queues[r.TaskID] = [2]string{r.TaskID, r.Tenant}, string(r.Queue)
	}
	res, err := t.tx.QueryContext(t.ctx, `DELETE FROM task_results WHERE task_id IN (
			SELECT t.id FROM json_each(?1) j JOIN tasks t ON t.id = j.value->>0 WHERE t.tenant = j.value->>1)
		AND state IN ('failed', 'timed_out', 'cancelled')
		RETURNING task_id, tenant, state, lease_epoch + 1, coalesce(length(CAST(result AS BLOB)), 0)`, jsonArg(list))
	if err != nil {
		return nil, err
	}
	gone, err := collect(res, func(r *sql.Rows) (engine.Moved, error) {
		var m engine.Moved
		var from string
		err := r.Scan(&m.TaskID, &m.Tenant, &from, &m.Epoch, &m.ResultBytes)
		m.From, m.Queue = dockettype.State(from), store.Queue(queues[m.TaskID])
		return m, err
	})
	if err != nil || len(gone) == 0 {
		return nil, err
	}
	live := make([][]any, len(gone))
	for i, m := range gone {
		live[i] = []any{m.TaskID, string(m.Queue), m.Epoch}
	}
	// A task with a concurrency key comes back waiting on its key; the
	// engine gives it a slot if one is free, in this transaction.
	rows2, err := t.tx.QueryContext(t.ctx, `INSERT INTO task_queue (id, tenant, queue, priority, state, attempt, max_attempts, lease_epoch,
			deadline_at, created_at, workflow, concurrency_key, key_slot, run_after)
		SELECT t.id, t.tenant, j.value->>1, t.priority, 'queued', 0, t.max_attempts, j.value->>2,
			?2 + (t.deadline_at - max(t.created_at, coalesce(t.run_at, t.created_at))), ?2, t.workflow,
			t.concurrency_key, 0, CASE WHEN t.concurrency_key IS NOT NULL THEN ?3 END
		FROM json_each(?1) j JOIN tasks t ON t.id = j.value->>0
		RETURNING id, workflow, coalesce(concurrency_key, '')`, jsonArg(live), ms(now), ms(engine.HeldUntil))
	if err != nil {
		return nil, err
	}
	type keyOf struct{ workflow, key string }
	keys := map[string]keyOf{}
	if _, err := collect(rows2, func(r *sql.Rows) (struct{}, error) {
		var id string
		var k keyOf
		err := r.Scan(&id, &k.workflow, &k.key)
		keys[id] = k
		return struct{}{}, err
	}); err != nil {
		return nil, err
	}
	for i := range gone {
		k := keys[gone[i].TaskID]
		gone[i].Workflow, gone[i].Key, gone[i].Ready = k.workflow, k.key, k.key == ""
	}
	return gone, nil
}

// LockFinished reads the results among ids: the write transaction is the
// lock.
func (t *txn) LockFinished(ids []string) ([]engine.Finished, error) {
	rows, err := t.tx.QueryContext(t.ctx, `SELECT task_id, tenant FROM task_results
		WHERE task_id IN (SELECT value FROM json_each(?)) ORDER BY task_id`, jsonArg(ids))
	if err != nil {
		return nil, err
	}
	return collect(rows, func(r *sql.Rows) (engine.Finished, error) {
		var f engine.Finished
		err := r.Scan(&f.TaskID, &f.Tenant)
		return f, err
	})
}
