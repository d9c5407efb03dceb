package postgres

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/store/engine"
	"github.com/docket-dev/docket/internal/store/fairshare"
)

// txn runs the engine's steps in one PostgreSQL transaction. Row sets go
// to the server as arrays (unnest), so a batch of N tasks is one statement
// per step.
//
// Statements whose answer the engine does not read (inserts, counter
// changes, row locks taken in order) are queued with later and go to the
// server together with the next statement that is read, or when the
// transaction ends: a batch of tasks costs a handful of round trips.
type txn struct {
	ctx     context.Context
	conn    *pgx.Conn
	channel string // where Notify sends
	pending pgx.Batch
	notes   []string // notification payloads, sent after the commit
}

var _ engine.Tx = (*txn)(nil)

// releaseSlots is how many counter slots releases spread over.
const releaseSlots = 16

// later queues a statement whose answer nobody reads.
func (t *txn) later(sql string, args ...any) { t.pending.Queue(sql, args...) }

// send sends the pending statements, then b's, in one round trip, and
// returns the results of b's statements for the caller to read and close.
func (t *txn) send(b *pgx.Batch) (pgx.BatchResults, error) {
	n := len(t.pending.QueuedQueries)
	all := &pgx.Batch{QueuedQueries: append(t.pending.QueuedQueries, b.QueuedQueries...)}
	t.pending = pgx.Batch{}
	br := t.conn.SendBatch(t.ctx, all)
	for range n {
		if _, err := br.Exec(); err != nil {
			br.Close()
			return nil, err
		}
	}
	return br, nil
}

// commit sends the pending statements, which end with the transaction's
// COMMIT, and after them the notifications (see sendNotes). It fails only
// if the transaction did not commit: a notification that cannot be sent is
// dropped.
func (t *txn) commit() error {
	t.later("COMMIT")
	committed := len(t.pending.QueuedQueries)
	t.sendNotes()
	all := t.pending
	t.pending = pgx.Batch{}
	br := t.conn.SendBatch(t.ctx, &all)
	dropped := false
	for i := range len(all.QueuedQueries) {
		if _, err := br.Exec(); err != nil {
			if i < committed {
				br.Close()
				return err
			}
			dropped = true
		}
	}
	if err := br.Close(); err != nil && !dropped {
		return err
	}
	return nil
}

// query runs one statement after the pending ones and returns its rows.
func (t *txn) query(sql string, args ...any) (pgx.Rows, error) {
	if len(t.pending.QueuedQueries) == 0 {
		return t.conn.Query(t.ctx, sql, args...)
	}
	b := &pgx.Batch{}
	b.Queue(sql, args...)
	br, err := t.send(b)
	if err != nil {
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		br.Close()
		return nil, err
	}
	return &batchRows{Rows: rows, br: br}, nil
}

// queryRow is query for one row.
func (t *txn) queryRow(sql string, args ...any) pgx.Row {
	rows, err := t.query(sql, args...)
	return &oneRow{rows: rows, err: err}
}

// batchRows closes its batch with its rows.
type batchRows struct {
	pgx.Rows
	br pgx.BatchResults
}

func (r *batchRows) Close() {
	r.Rows.Close()
	r.br.Close()
}

// oneRow is a pgx.Row over query's rows.
type oneRow struct {
	rows pgx.Rows
	err  error
}

func (r *oneRow) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	defer r.rows.Close()
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	if err := r.rows.Scan(dest...); err != nil {
		return err
	}
	r.rows.Close()
	return r.rows.Err()
}

// Bindings reads the existing bindings among keys.
func (t *txn) Bindings(keys []engine.TenantKey) (map[engine.TenantKey]engine.Binding, error) {
	tenants, ks := make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		tenants[i], ks[i] = k.Tenant, k.Key
	}
	// A lateral lookup per key (OFFSET 0 keeps the planner from turning it
	// into a hash join that would read the whole table).
	rows, err := t.query(`SELECT b.tenant, b.key, b.request_hash, b.task_id
		FROM unnest($1::text[], $2::text[]) AS k (tenant, key)
		CROSS JOIN LATERAL (SELECT * FROM idempotency_keys b
			WHERE b.tenant = k.tenant AND b.key = k.key OFFSET 0) b`, tenants, ks)
	if err != nil {
		return nil, err
	}
	out := map[engine.TenantKey]engine.Binding{}
	var b engine.Binding
	_, err = pgx.ForEachRow(rows, []any{&b.Tenant, &b.Key, &b.RequestHash, &b.TaskID}, func() error {
		out[b.TenantKey] = b
		return nil
	})
	return out, err
}

// EnsureTenants creates missing tenants and their gate rows.
func (t *txn) EnsureTenants(ids []string, limit int, now time.Time) error {
	t.later(`INSERT INTO tenants (id, max_in_flight, created_at) SELECT id, $2, $3 FROM unnest($1::text[]) AS id
		ORDER BY id ON CONFLICT (id) DO NOTHING`, ids, limit, ts(now))
	t.later(`INSERT INTO counters (scope, key, slot) SELECT 'tenant', id, 0 FROM unnest($1::text[]) AS id
		ORDER BY id ON CONFLICT DO NOTHING`, ids)
	return nil
}

// LockGates locks the gate rows (pools, then tenants, each sorted) and
// reads the counts: the sum of every slot, as committed when the lock was
// granted.
func (t *txn) LockGates(pools []dockettype.Pool, tenants []string) (*engine.Gates, error) {
	t.later(`SELECT 1 FROM counters WHERE scope = 'pool' AND key = ANY($1) AND slot = 0 ORDER BY key FOR UPDATE`, poolKeys(pools))
	t.later(`SELECT 1 FROM counters WHERE scope = 'tenant' AND key = ANY($1) AND slot = 0 ORDER BY key FOR UPDATE`, tenants)
	// The counts are read after the locks are granted, in the same round
	// trip.
	return t.ReadGates(pools, tenants)
}

// ReadGates reads the counts and the tenants' limits as committed, without
// a lock.
func (t *txn) ReadGates(pools []dockettype.Pool, tenants []string) (*engine.Gates, error) {
	g := &engine.Gates{Pools: map[dockettype.Pool]int64{}, Tenants: map[string]engine.TenantGate{}}
	rows, err := t.query(`SELECT scope, key, sum(n)::bigint, sum(bytes)::bigint, 0, 0::bigint FROM counters
			WHERE (scope = 'pool' AND key = ANY($1)) OR (scope = 'tenant' AND key = ANY($2))
			GROUP BY scope, key
		UNION ALL
		SELECT 'limit', id, 0, 0, max_in_flight, coalesce(storage_quota_bytes, -1) FROM tenants WHERE id = ANY($2)
		UNION ALL
		`+engine.RefusingGatesSQL, poolKeys(pools), tenants)
	if err != nil {
		return nil, err
	}
	var (
		scope, key      string
		n, bytes, quota int64
		limit           int
	)
	_, err = pgx.ForEachRow(rows, []any{&scope, &key, &n, &bytes, &limit, &quota}, func() error {
		g.AddRow(scope, key, n, bytes, limit, quota)
		return nil
	})
	return g, err
}

func poolKeys(pools []dockettype.Pool) []string {
	keys := make([]string, len(pools))
	for i, p := range pools {
		keys[i] = string(p)
	}
	return keys
}

// InsertBindings inserts bindings in the order given; a key another
// transaction bound is skipped (the insert waits for that transaction to
// end first).
func (t *txn) InsertBindings(rows []engine.Binding, now time.Time) (map[engine.TenantKey]bool, error) {
	n := len(rows)
	tenants, keys, hashes, ids := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	for i, r := range rows {
		tenants[i], keys[i], hashes[i], ids[i] = r.Tenant, r.Key, r.RequestHash, r.TaskID
	}
	res, err := t.query(`INSERT INTO idempotency_keys (tenant, key, request_hash, task_id, created_at)
		SELECT k.tenant, k.key, k.hash, k.task_id, $5
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) WITH ORDINALITY AS k (tenant, key, hash, task_id, ord)
		ORDER BY k.ord
		ON CONFLICT (tenant, key) DO NOTHING
		RETURNING tenant, key`, tenants, keys, hashes, ids, ts(now))
	if err != nil {
		return nil, err
	}
	out := make(map[engine.TenantKey]bool, n)
	var k engine.TenantKey
	_, err = pgx.ForEachRow(res, []any{&k.Tenant, &k.Key}, func() error {
		out[k] = true
		return nil
	})
	return out, err
}

// InsertTasks writes the immutable task rows and their live rows.
func (t *txn) InsertTasks(items []*store.AdmitItem, held map[string]bool, now time.Time) error {
	n := len(items)
	var (
		ids, tenants, keys, authors, workflows = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		pools, queues, traces, versions        = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		prios, maxAttempts                     = make([]int32, n), make([]int32, n)
		deadlines                              = make([]time.Time, n)
		runAts, runAfters                      = make([]*time.Time, n), make([]*time.Time, n)
		inputs                                 = make([][]byte, n)
		ckeys                                  = make([]*string, n)
		sampled                                = make([]bool, n)
		slots                                  = make([]bool, n)
	)
	now = ts(now)
	for i, it := range items {
		ids[i], tenants[i], keys[i], authors[i], workflows[i] = it.TaskID, it.Tenant, it.IdempotencyKey, it.Author, it.Workflow
		pools[i], queues[i], traces[i], versions[i] = string(it.Pool), string(it.QueueOf()), it.TraceID, it.ConfigVersion
		sampled[i] = !it.TraceUnsampled
		prios[i], maxAttempts[i] = int32(it.Priority), int32(it.MaxAttempts)
		deadlines[i] = ts(it.DeadlineAt)
		if !it.RunAt.IsZero() {
			r := ts(it.RunAt)
			runAts[i] = &r
			if r.After(now) {
				runAfters[i] = &r
			}
		}
		if it.ConcurrencyKey != "" {
			k := it.ConcurrencyKey
			ckeys[i] = &k
			slots[i] = !held[it.TaskID]
			if held[it.TaskID] {
				h := engine.HeldUntil
				runAfters[i] = &h
			}
		}
		inputs[i] = it.Input
		if inputs[i] == nil {
			inputs[i] = []byte("null")
		}
	}
	t.later(`INSERT INTO tasks (id, tenant, idempotency_key, author, workflow, pool, priority, max_attempts,
			deadline_at, run_at, created_at, trace_id, config_version, input, concurrency_key, trace_sampled)
		SELECT u.id, u.tenant, u.key, u.author, u.workflow, u.pool, u.priority, u.max_attempts,
			u.deadline_at, u.run_at, $14, u.trace_id, u.config_version, u.input, u.ckey, u.sampled
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::int[], $8::int[],
			$9::timestamptz[], $10::timestamptz[], $11::text[], $12::text[], $13::bytea[], $15::text[], $16::boolean[])
			AS u (id, tenant, key, author, workflow, pool, priority, max_attempts, deadline_at, run_at, trace_id, config_version, input, ckey, sampled)`,
		ids, tenants, keys, authors, workflows, pools, prios, maxAttempts, deadlines, runAts, traces, versions, inputs, now, ckeys, sampled)
	t.later(`INSERT INTO task_queue (id, tenant, queue, priority, state, max_attempts, run_after, deadline_at, created_at,
			workflow, concurrency_key, key_slot)
		SELECT u.id, u.tenant, u.queue, u.priority, 'queued', u.max_attempts, u.run_after, u.deadline_at, $8,
			u.workflow, u.ckey, u.slot
		FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::int[], $6::timestamptz[], $7::timestamptz[],
			$9::text[], $10::text[], $11::bool[])
			AS u (id, tenant, queue, priority, max_attempts, run_after, deadline_at, workflow, ckey, slot)`,
		ids, tenants, queues, prios, maxAttempts, runAfters, deadlines, now, workflows, ckeys, slots)
	return nil
}

// ReadTasks reads tasks by ID, with their results.
func (t *txn) ReadTasks(ids []string) (map[string]*dockettype.Task, error) {
	rows, err := t.query(engine.TaskSelect(true)+" WHERE t.id = ANY($1)", ids)
	if err != nil {
		return nil, err
	}
	tasks, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*dockettype.Task, error) { return engine.ScanTask(r) })
	if err != nil {
		return nil, err
	}
	out := make(map[string]*dockettype.Task, len(tasks))
	for _, task := range tasks {
		out[task.ID] = task
	}
	return out, nil
}

// PromoteDue makes due delayed tasks ready and reads the flow rules that
// pause or rate-limit anything, in one statement. A due task another
// transaction holds (a cancel, a timeout) is skipped; a later claim
// promotes it if it is still queued.
func (t *txn) PromoteDue(queue store.Queue, now time.Time, limit int) ([]string, []store.FlowRule, error) {
	rows, err := t.query(`WITH p AS (
			UPDATE task_queue SET run_after = NULL
			WHERE id IN (
				SELECT id FROM task_queue
				WHERE queue = $1 AND state = 'queued' AND run_after IS NOT NULL AND run_after <= $2
				ORDER BY run_after LIMIT $3
				FOR UPDATE SKIP LOCKED)
			RETURNING tenant)
		SELECT '', tenant, false, 0, 0, NULL::timestamptz FROM p
		UNION ALL
		SELECT scope, key, paused, coalesce(rate_per_second, 0), burst, throttled_at FROM flow_rules
		WHERE paused OR rate_per_second IS NOT NULL`, string(queue), ts(now), limit)
	if err != nil {
		return nil, nil, err
	}
	var due []string
	var rules []store.FlowRule
	var r store.FlowRule
	var at *time.Time
	_, err = pgx.ForEachRow(rows, []any{&r.Scope, &r.Key, &r.Paused, &r.RatePerSecond, &r.Burst, &at}, func() error {
		if r.Scope == "" {
			due = append(due, r.Key)
			return nil
		}
		r.ThrottledAt = at
		rules = append(rules, r)
		return nil
	})
	return due, rules, err
}

// ReadyTenants reads the tenants with ready work, lowest virtual time first.
func (t *txn) ReadyTenants(queue store.Queue, tenant string, limit int, except []string) ([]fairshare.Tenant, error) {
	var rows pgx.Rows
	var err error
	if len(except) == 0 {
		rows, err = t.query(`SELECT q.tenant, q.queued, q.vtime, coalesce(tn.weight, 1)
			FROM tenant_queues q LEFT JOIN tenants tn ON tn.id = q.tenant
			WHERE q.queue = $1 AND q.queued > 0 AND ($3 = '' OR q.tenant = $3)
			ORDER BY q.vtime, q.tenant LIMIT $2`, string(queue), limit, tenant)
	} else {
		rows, err = t.query(`SELECT q.tenant, q.queued, q.vtime, coalesce(tn.weight, 1)
			FROM tenant_queues q LEFT JOIN tenants tn ON tn.id = q.tenant
			WHERE q.queue = $1 AND q.queued > 0 AND ($3 = '' OR q.tenant = $3) AND q.tenant <> ALL($4)
			ORDER BY q.vtime, q.tenant LIMIT $2`, string(queue), limit, tenant, except)
	}
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (fairshare.Tenant, error) {
		var ft fairshare.Tenant
		err := r.Scan(&ft.ID, &ft.Queued, &ft.VTime, &ft.Weight)
		return ft, err
	})
}

// takeSQL claims a tenant's first ready tasks: $1 queue, $2 tenant, $3
// limit, $4 owner, $5 lease expiry, $6 now.
//
// Every step reads by index, whatever the planner's statistics say: the
// update finds its rows by primary key from the picked IDs, and each task
// is a lateral primary-key lookup (OFFSET 0 keeps it one), never a hash
// join over the whole history.
const takeSQL = `WITH picked AS (
		SELECT id FROM task_queue
		WHERE queue = $1 AND tenant = $2 AND state = 'queued' AND run_after IS NULL
		ORDER BY priority DESC, id LIMIT $3
		FOR UPDATE SKIP LOCKED
	), q AS (
		UPDATE task_queue l SET state = 'running', attempt = l.attempt + 1, lease_epoch = l.lease_epoch + 1,
			lease_owner = $4, lease_expires_at = $5, started_at = coalesce(l.started_at, $6)
		WHERE l.id = ANY (ARRAY(SELECT id FROM picked))
		RETURNING l.*
	)
	SELECT ` + claimCols + `, t.input, NOT t.trace_sampled FROM q
	CROSS JOIN LATERAL (SELECT * FROM tasks t WHERE t.id = q.id OFFSET 0) t`

// Take claims each granted tenant's first ready tasks, one statement per
// grant, all in one round trip: the rows are picked and locked (SKIP
// LOCKED: never waiting for a row another transaction holds), moved to
// running and returned with their input.
func (t *txn) Take(queue store.Queue, grants []fairshare.Grant, owner string, expires, now time.Time) ([][]*store.ClaimedTask, error) {
	b := &pgx.Batch{}
	for _, g := range grants {
		b.Queue(takeSQL, string(queue), g.Tenant, g.Count, owner, ts(expires), ts(now))
	}
	// The claim read no pause or rate limit in its first statement; a rule
	// committed since (read committed: every statement sees the latest
	// commits) could hold back tasks these statements saw. Checked in the
	// same round trip; the engine then claims again under the rules.
	b.Queue("SELECT EXISTS (SELECT 1 FROM flow_rules WHERE paused OR rate_per_second IS NOT NULL)")
	br, err := t.send(b)
	if err != nil {
		return nil, err
	}
	out := make([][]*store.ClaimedTask, len(grants))
	for i := range grants {
		rows, err := br.Query()
		if err == nil {
			out[i], err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (*store.ClaimedTask, error) {
				c := &store.ClaimedTask{}
				var err error
				c.Task, err = engine.ScanTask(r, &c.Input, &c.TraceUnsampled)
				return c, err
			})
		}
		if err != nil {
			br.Close()
			return nil, err
		}
	}
	var ruled bool
	if err := br.QueryRow().Scan(&ruled); err != nil {
		br.Close()
		return nil, err
	}
	if ruled {
		br.Close()
		return nil, engine.ErrFlowChanged
	}
	return out, br.Close()
}

// SetTenantQueues applies the claim's charges and ready counts, one row at
// a time in the engine's (tenant) order, in one round trip.
func (t *txn) SetTenantQueues(queue store.Queue, rows []engine.TenantQueue) error {
	for _, r := range rows {
		t.later(`UPDATE tenant_queues SET vtime = vtime + $3, queued = GREATEST(queued - $4, 0)
			WHERE queue = $1 AND tenant = $2`, string(queue), r.Tenant, r.Charge, r.Taken)
	}
	return nil
}

// lockLiveSQL locks the live rows among $1 in ID order.
const lockLiveSQL = "SELECT 1 FROM task_queue WHERE id = ANY($1) ORDER BY id FOR UPDATE"

// LockLive locks the live rows among ids in ID order.
func (t *txn) LockLive(ids []string) error {
	if len(ids) < 2 {
		return nil // one row needs no order: the change itself locks it
	}
	t.later(lockLiveSQL, ids)
	return nil
}

// endSQL deletes the live rows that still match ($1 IDs with their epochs,
// expected states and outcomes, $11 now) and writes their results.
const endSQL = `WITH u AS (
			SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::bool[], $6::text[], $7::text[],
				$8::bytea[], $9::bool[], $10::bool[])
				AS u (id, epoch, from_state, to_state, bump, code, message, result, deadline_due, lease_due)
		), gone AS (
			DELETE FROM task_queue q USING u
			WHERE q.id = ANY($1) AND q.id = u.id AND q.lease_epoch = u.epoch AND (u.from_state = '' OR q.state = u.from_state)
				AND (NOT u.deadline_due OR q.deadline_at <= $11) AND (NOT u.lease_due OR q.lease_expires_at <= $11)
			RETURNING q.id, q.tenant, q.queue, q.state, q.attempt, q.started_at,
				q.lease_epoch + CASE WHEN u.bump THEN 1 ELSE 0 END AS epoch,
				q.state = 'queued' AND q.run_after IS NULL AS ready, q.has_dependents,
				q.workflow, coalesce(q.concurrency_key, '') AS ckey, q.key_slot,
				u.to_state, u.code, u.message, u.result
		), done AS (
			INSERT INTO task_results (task_id, tenant, state, attempt, lease_epoch, started_at, finished_at,
				result, error_code, error_message)
			SELECT id, tenant, to_state, attempt, epoch, started_at, $11, result, nullif(code, ''), nullif(message, '')
			FROM gone
		)
		SELECT id, tenant, queue, state, epoch, ready, has_dependents, workflow, ckey, key_slot FROM gone`

// End deletes the live rows that still match and writes their results, in
// one statement.
func (t *txn) End(rows []engine.End, now time.Time) ([]engine.Moved, error) {
	n := len(rows)
	var (
		ids, froms, tos, codes, msgs = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		epochs                       = make([]int64, n)
		bumps, deadlineDue, leaseDue = make([]bool, n), make([]bool, n), make([]bool, n)
		results                      = make([][]byte, n)
	)
	for i, r := range rows {
		ids[i], froms[i], tos[i], codes[i], msgs[i] = r.TaskID, string(r.From), string(r.To), string(r.Code), r.Message
		epochs[i], bumps[i], deadlineDue[i], leaseDue[i], results[i] = r.Epoch, r.BumpEpoch, r.DeadlineDue, r.LeaseDue, r.Result
	}
	res, err := t.query(endSQL,
		ids, epochs, froms, tos, bumps, codes, msgs, results, deadlineDue, leaseDue, ts(now))
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(res, func(r pgx.CollectableRow) (engine.Moved, error) {
		var m engine.Moved
		var queue, from string
		err := r.Scan(&m.TaskID, &m.Tenant, &queue, &from, &m.Epoch, &m.Ready, &m.HasDependents, &m.Workflow, &m.Key, &m.KeySlot)
		m.Queue, m.From = store.Queue(queue), dockettype.State(from)
		return m, err
	})
}

// Requeue moves running tasks that still match back to queued.
func (t *txn) Requeue(rows []engine.Requeue, now time.Time) ([]engine.Moved, error) {
	n := len(rows)
	var (
		ids, codes, msgs          = make([]string, n), make([]string, n), make([]string, n)
		epochs                    = make([]int64, n)
		bumps, uncharge, leaseDue = make([]bool, n), make([]bool, n), make([]bool, n)
		runAfters                 = make([]*time.Time, n)
	)
	for i, r := range rows {
		ids[i], codes[i], msgs[i], epochs[i] = r.TaskID, string(r.Code), r.Message, r.Epoch
		bumps[i], uncharge[i], leaseDue[i] = r.BumpEpoch, r.Uncharge, r.LeaseDue
		if !r.RunAfter.IsZero() {
			ra := ts(r.RunAfter)
			runAfters[i] = &ra
		}
	}
	res, err := t.query(`UPDATE task_queue q SET state = 'queued',
			attempt = q.attempt - CASE WHEN u.uncharge THEN 1 ELSE 0 END,
			lease_epoch = q.lease_epoch + CASE WHEN u.bump THEN 1 ELSE 0 END,
			lease_owner = NULL, lease_expires_at = NULL, run_after = u.run_after,
			error_code = CASE WHEN u.uncharge THEN q.error_code ELSE nullif(u.code, '') END,
			error_message = CASE WHEN u.uncharge THEN q.error_message ELSE nullif(u.message, '') END
		FROM unnest($1::text[], $2::bigint[], $3::bool[], $4::bool[], $5::timestamptz[], $6::text[], $7::text[], $8::bool[])
			AS u (id, epoch, bump, uncharge, run_after, code, message, lease_due)
		WHERE q.id = ANY($1) AND q.id = u.id AND q.lease_epoch = u.epoch AND q.state = 'running'
			AND (NOT u.lease_due OR q.lease_expires_at <= $9)
		RETURNING q.id, q.tenant, q.queue, 'running', q.lease_epoch, q.run_after IS NULL,
			q.workflow, coalesce(q.concurrency_key, ''), q.key_slot`,
		ids, epochs, bumps, uncharge, runAfters, codes, msgs, leaseDue, ts(now))
	if err != nil {
		return nil, err
	}
	return collectMoved(res)
}

func collectMoved(rows pgx.Rows) ([]engine.Moved, error) {
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (engine.Moved, error) {
		var m engine.Moved
		var queue, from string
		err := r.Scan(&m.TaskID, &m.Tenant, &queue, &from, &m.Epoch, &m.Ready, &m.Workflow, &m.Key, &m.KeySlot)
		m.Queue, m.From = store.Queue(queue), dockettype.State(from)
		return m, err
	})
}

// States reads the current state of tasks, live or finished.
func (t *txn) States(ids []string) (map[string]dockettype.State, error) {
	rows, err := t.query(`SELECT id, state FROM task_queue WHERE id = ANY($1)
		UNION ALL SELECT task_id, state FROM task_results WHERE task_id = ANY($1)`, ids)
	if err != nil {
		return nil, err
	}
	out := map[string]dockettype.State{}
	var id, state string
	_, err = pgx.ForEachRow(rows, []any{&id, &state}, func() error {
		out[id] = dockettype.State(state)
		return nil
	})
	return out, err
}

// Renew extends the leases still held.
func (t *txn) Renew(leases []store.Lease, expires time.Time) ([]store.Lease, error) {
	ids, epochs := make([]string, len(leases)), make([]int64, len(leases))
	for i, l := range leases {
		ids[i], epochs[i] = l.TaskID, l.Epoch
	}
	rows, err := t.query(`UPDATE task_queue q SET lease_expires_at = $1
		FROM unnest($2::text[], $3::bigint[]) AS l (id, epoch)
		WHERE q.id = ANY($2) AND q.id = l.id AND q.lease_epoch = l.epoch AND q.state = 'running'
		RETURNING q.id, q.lease_epoch`, ts(expires), ids, epochs)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Lease, error) {
		var l store.Lease
		err := r.Scan(&l.TaskID, &l.Epoch)
		return l, err
	})
}

// LeaseAttempt share-locks a task running under lease.
func (t *txn) LeaseAttempt(lease store.Lease) (int, string, bool, error) {
	var attempt int
	var tenant string
	err := t.queryRow("SELECT attempt, tenant FROM task_queue WHERE id = $1 AND lease_epoch = $2 AND state = 'running' FOR SHARE",
		lease.TaskID, lease.Epoch).Scan(&attempt, &tenant)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, "", false, nil
	}
	return attempt, tenant, err == nil, err
}

// InsertEvidence records evidence items.
func (t *txn) InsertEvidence(lease store.Lease, attempt int, items []store.EvidenceItem, now time.Time) error {
	kinds, bodies := make([]string, len(items)), make([][]byte, len(items))
	for i, it := range items {
		kinds[i], bodies[i] = it.Kind, it.Body
	}
	t.later(`INSERT INTO evidence (task_id, attempt, epoch, kind, body, created_at)
		SELECT $1, $2, $3, e.kind, e.body, $4
		FROM unnest($5::text[], $6::bytea[]) WITH ORDINALITY AS e (kind, body, ord)
		ORDER BY e.ord`, lease.TaskID, attempt, lease.Epoch, ts(now), kinds, bodies)
	return nil
}

// LockLiveTasks locks the live tasks among ids in ID order.
func (t *txn) LockLiveTasks(ids []string) (map[string]engine.TaskState, error) {
	return t.taskStates("SELECT id, tenant, state, lease_epoch FROM task_queue WHERE id = ANY($1) ORDER BY id FOR UPDATE", ids)
}

// FinishedTasks reads the terminal tasks among ids.
func (t *txn) FinishedTasks(ids []string) (map[string]engine.TaskState, error) {
	return t.taskStates("SELECT task_id, tenant, state, lease_epoch FROM task_results WHERE task_id = ANY($1)", ids)
}

func (t *txn) taskStates(sql string, ids []string) (map[string]engine.TaskState, error) {
	rows, err := t.query(sql, ids)
	if err != nil {
		return nil, err
	}
	out := make(map[string]engine.TaskState, len(ids))
	var (
		id string
		ts engine.TaskState
	)
	_, err = pgx.ForEachRow(rows, []any{&id, &ts.Tenant, &ts.State, &ts.Epoch}, func() error {
		out[id] = ts
		return nil
	})
	return out, err
}

// FinishedBefore finds tasks that finished before a time. It walks the
// primary key: task IDs are UUIDv7, ordered by creation time, so the old
// results are at its front and a batch reads about as many rows as it
// returns, however many results the table holds (ordering by finished_at
// would sort them all, batch after batch). The rows it steps over are the
// few old tasks that finished recently (long runs, far run_at, retries).
func (t *txn) FinishedBefore(before time.Time, limit int) ([]string, error) {
	// A task a live task depends on stays: its dependent reads its result.
	// Locked, skipping the rows a retry holds: a task revived meanwhile is
	// not deleted under it (see engine.Store.Retry).
	rows, err := t.query(`SELECT task_id FROM task_results r WHERE finished_at < $1
			AND NOT EXISTS (SELECT 1 FROM task_dependencies d JOIN task_queue q ON q.id = d.task_id WHERE d.depends_on = r.task_id)
		ORDER BY task_id LIMIT $2 FOR UPDATE OF r SKIP LOCKED`, ts(before), limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// DeleteTasks deletes finished tasks with everything they own.
func (t *txn) DeleteTasks(ids []string) (map[string]int64, error) {
	rows, err := t.query(`SELECT tenant, sum(n)::bigint FROM (
			SELECT tenant, octet_length(input) AS n FROM tasks WHERE id = ANY($1)
				AND NOT EXISTS (SELECT 1 FROM task_queue q WHERE q.id = tasks.id)
			UNION ALL
			SELECT tenant, coalesce(octet_length(result), 0) FROM task_results WHERE task_id = ANY($1)
			UNION ALL
			SELECT t.tenant, octet_length(e.body) FROM evidence e JOIN tasks t ON t.id = e.task_id
				WHERE e.task_id = ANY($1)) b
		GROUP BY tenant`, ids)
	if err != nil {
		return nil, err
	}
	freed := map[string]int64{}
	var tenant string
	var n int64
	if _, err := pgx.ForEachRow(rows, []any{&tenant, &n}, func() error {
		freed[tenant] = n
		return nil
	}); err != nil {
		return nil, err
	}
	t.later("SET LOCAL docket.retention = 'on'")
	t.later(`DELETE FROM idempotency_keys k USING tasks t
		WHERE t.id = ANY($1) AND k.tenant = t.tenant AND k.key = t.idempotency_key AND k.task_id = t.id`, ids)
	t.later("DELETE FROM task_events WHERE task_id = ANY($1)", ids)
	t.later("DELETE FROM evidence WHERE task_id = ANY($1)", ids)
	t.later("DELETE FROM task_dependencies WHERE task_id = ANY($1)", ids)
	t.later("DELETE FROM task_results WHERE task_id = ANY($1)", ids)
	t.later("DELETE FROM tasks WHERE id = ANY($1) AND NOT EXISTS (SELECT 1 FROM task_queue q WHERE q.id = tasks.id)", ids)
	t.later("SET LOCAL docket.retention = 'off'")
	return freed, nil
}

// AddInFlight adds to counters (in-flight counts and stored bytes): to the
// gate slot (held locked) for admission, to a random release slot
// otherwise.
func (t *txn) AddInFlight(deltas []engine.CounterDelta, release bool) error {
	slot := int16(0)
	if release {
		slot = int16(1 + rand.IntN(releaseSlots))
	}
	n := len(deltas)
	scopes, keys, ns, bytes := make([]string, n), make([]string, n), make([]int64, n), make([]int64, n)
	for i, d := range deltas {
		scopes[i], keys[i], ns[i], bytes[i] = d.Scope, d.Key, d.N, d.Bytes
	}
	t.later(`INSERT INTO counters AS c (scope, key, slot, n, bytes)
		SELECT d.scope, d.key, $4, d.n, d.bytes
		FROM unnest($1::text[], $2::text[], $3::bigint[], $5::bigint[]) WITH ORDINALITY AS d (scope, key, n, bytes, ord)
		ORDER BY d.ord
		ON CONFLICT (scope, key, slot) DO UPDATE SET n = c.n + excluded.n, bytes = c.bytes + excluded.bytes`,
		scopes, keys, ns, slot, bytes)
	return nil
}

// AddQueued changes ready counts; see engine.Tx. One statement per row,
// in the engine's (sorted) order and in one round trip, so that
// transactions touching the same tenants lock them in the same order. An
// increase is an upsert (a tenant's first ready task creates its row).
func (t *txn) AddQueued(deltas []engine.QueueDelta) error {
	for _, d := range deltas {
		if d.N > 0 {
			t.later(`INSERT INTO tenant_queues AS q (queue, tenant, queued, vtime)
				VALUES ($1, $2, $3, coalesce(
					(SELECT min(a.vtime) FROM tenant_queues a WHERE a.queue = $1 AND a.queued > 0),
					(SELECT max(a.vtime) FROM tenant_queues a WHERE a.queue = $1), 0))
				ON CONFLICT (queue, tenant) DO UPDATE SET
					vtime = CASE WHEN q.queued = 0 THEN GREATEST(q.vtime, excluded.vtime) ELSE q.vtime END,
					queued = q.queued + excluded.queued`, string(d.Queue), d.Tenant, d.N)
			continue
		}
		t.later("UPDATE tenant_queues SET queued = GREATEST(queued + $3, 0) WHERE queue = $1 AND tenant = $2",
			string(d.Queue), d.Tenant, d.N)
	}
	return nil
}

// InsertEvents appends history rows in order.
func (t *txn) InsertEvents(events []engine.Event, now time.Time) error {
	n := len(events)
	ids, froms, tos, codes := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	epochs := make([]int64, n)
	var keys, roles []string // only when an event names its actor
	for i, e := range events {
		ids[i], froms[i], tos[i], epochs[i], codes[i] = e.TaskID, string(e.From), string(e.To), e.Epoch, string(e.Code)
		if e.By.KeyID != "" && keys == nil {
			keys, roles = make([]string, n), make([]string, n)
		}
		if keys != nil {
			keys[i], roles[i] = e.By.KeyID, string(e.By.Role)
		}
	}
	// One row per event, in the order given: an admission whose task ends
	// in the same transaction (its dependency had already failed) writes
	// two events for it.
	if keys == nil {
		t.later(`INSERT INTO task_events (task_id, from_state, to_state, epoch, code, at)
			SELECT e.task_id, e.from_state, e.to_state, e.epoch, e.code, $6
			FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::text[]) WITH ORDINALITY
				AS e (task_id, from_state, to_state, epoch, code, ord)
			ORDER BY e.ord`, ids, froms, tos, epochs, codes, ts(now))
		return nil
	}
	t.later(`INSERT INTO task_events (task_id, from_state, to_state, epoch, code, at, actor_key, actor_role)
		SELECT e.task_id, e.from_state, e.to_state, e.epoch, e.code, $6, e.actor_key, e.actor_role
		FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::text[], $7::text[], $8::text[]) WITH ORDINALITY
			AS e (task_id, from_state, to_state, epoch, code, actor_key, actor_role, ord)
		ORDER BY e.ord`,
		ids, froms, tos, epochs, codes, ts(now), keys, roles)
	return nil
}

// reviveSQL deletes the result rows of the tasks $1 that are still
// retryable and of their item's tenant ($2, pairwise), and inserts their
// live rows in the queue $3 at $4: queued and ready, attempt 0, the
// result's epoch+1, the original timeout from now. The rows to delete are
// found from the list, a primary-key probe per pair (OFFSET 0 keeps each
// one), and deleted by their tuple IDs; each task is a primary-key lookup
// too. No step compares rows with the list: a filter of each row against
// the pairs as an array searched it linearly (10 ms of a thousand-task
// batch), and a join with it was planned, under a bulk retry's statistics,
// as a hash of every failed task of the tenant (230 ms). It answers the
// live rows (kind 'live') and, apart, the states they came from (kind
// 'gone'), which Revive pairs by ID: joined in the statement, a planner
// that expected one row of each made it a nested loop of every row with
// every row (60 ms of a thousand-task retry). A 'gone' row's epoch column
// is the bytes of the result it deleted. (A result row is never updated,
// so the tuple ID found is the row's.)
const reviveSQL = `WITH gone AS (
		DELETE FROM task_results r
		WHERE r.ctid = ANY (ARRAY(
				SELECT f.ctid FROM unnest($1::text[], $2::text[]) AS u (id, tenant)
				CROSS JOIN LATERAL (SELECT x.ctid FROM task_results x WHERE x.task_id = u.id AND x.tenant = u.tenant OFFSET 0) f))
			AND r.state IN ('failed', 'timed_out', 'cancelled')
		RETURNING r.task_id, r.tenant, r.state, r.lease_epoch, coalesce(octet_length(r.result), 0)::bigint AS bytes
	), live AS (
		-- A task with a concurrency key comes back waiting on its key; the
		-- engine gives it a slot if one is free, in this transaction.
		INSERT INTO task_queue (id, tenant, queue, priority, state, attempt, max_attempts, lease_epoch, deadline_at, created_at,
			workflow, concurrency_key, key_slot, run_after)
		SELECT t.id, t.tenant, $3, t.priority, 'queued', 0, t.max_attempts, g.lease_epoch + 1,
			$4::timestamptz + (t.deadline_at - GREATEST(t.created_at, coalesce(t.run_at, t.created_at))), $4, t.workflow,
			t.concurrency_key, false, CASE WHEN t.concurrency_key IS NOT NULL THEN $5::timestamptz END
		FROM gone g CROSS JOIN LATERAL (SELECT * FROM tasks t WHERE t.id = g.task_id OFFSET 0) t
		RETURNING id, tenant, lease_epoch, workflow, concurrency_key
	)
	SELECT 'live', l.id, l.tenant, l.lease_epoch, l.concurrency_key IS NULL, l.workflow, coalesce(l.concurrency_key, '')
	FROM live l
	UNION ALL
	SELECT 'gone', g.task_id, '', g.bytes, false, '', g.state FROM gone g`

// Revive makes retryable terminal tasks live again: one statement per
// queue, all in one round trip. The caller guarantees each row's queue is
// of the task's pool (engine.Store.Retry's items).
func (t *txn) Revive(rows []engine.Revive, now time.Time) ([]engine.Moved, error) {
	type group struct{ ids, tenants []string }
	groups := map[store.Queue]*group{}
	var order []store.Queue
	for _, r := range rows {
		g := groups[r.Queue]
		if g == nil {
			g = &group{}
			groups[r.Queue] = g
			order = append(order, r.Queue)
		}
		g.ids = append(g.ids, r.TaskID)
		g.tenants = append(g.tenants, r.Tenant)
	}
	b := &pgx.Batch{}
	for _, q := range order {
		b.Queue(reviveSQL, groups[q].ids, groups[q].tenants, string(q), ts(now), ts(engine.HeldUntil))
	}
	br, err := t.send(b)
	if err != nil {
		return nil, err
	}
	var out []engine.Moved
	for _, q := range order {
		rows, err := br.Query()
		if err == nil {
			var moved []engine.Moved
			moved, err = collectRevived(rows, q)
			out = append(out, moved...)
		}
		if err != nil {
			br.Close()
			return nil, err
		}
	}
	return out, br.Close()
}

// collectRevived pairs reviveSQL's live rows with the states they came
// from.
func collectRevived(rows pgx.Rows, q store.Queue) ([]engine.Moved, error) {
	var live []engine.Moved
	type gone struct {
		from  dockettype.State
		bytes int64
	}
	from := map[string]gone{}
	var (
		kind, id, tenant, workflow, key string
		epoch                           int64
		ready                           bool
	)
	_, err := pgx.ForEachRow(rows, []any{&kind, &id, &tenant, &epoch, &ready, &workflow, &key}, func() error {
		if kind == "gone" {
			from[id] = gone{from: dockettype.State(key), bytes: epoch}
			return nil
		}
		live = append(live, engine.Moved{TaskID: id, Tenant: tenant, Queue: q, Epoch: epoch, Ready: ready, Workflow: workflow, Key: key})
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i := range live {
		g := from[live[i].TaskID]
		live[i].From, live[i].ResultBytes = g.from, g.bytes
	}
	return live, nil
}

// LockFinished locks the result rows among ids in ID order.
func (t *txn) LockFinished(ids []string) ([]engine.Finished, error) {
	rows, err := t.query(`SELECT task_id, tenant FROM task_results WHERE task_id = ANY($1) ORDER BY task_id FOR UPDATE`, ids)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (engine.Finished, error) {
		var f engine.Finished
		err := r.Scan(&f.TaskID, &f.Tenant)
		return f, err
	})
}
