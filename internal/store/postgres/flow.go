package postgres

import (
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/store/engine"
)

// Candidates locks a tenant's first ready tasks, leaving out workflows.
func (t *txn) Candidates(queue store.Queue, tenant string, limit int, exceptWorkflows []string) ([]engine.Candidate, error) {
	if exceptWorkflows == nil {
		exceptWorkflows = []string{}
	}
	rows, err := t.query(`SELECT id, workflow FROM task_queue
		WHERE queue = $1 AND tenant = $2 AND state = 'queued' AND run_after IS NULL AND workflow <> ALL($4)
		ORDER BY priority DESC, id LIMIT $3
		FOR UPDATE SKIP LOCKED`, string(queue), tenant, limit, exceptWorkflows)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (engine.Candidate, error) {
		var c engine.Candidate
		err := r.Scan(&c.ID, &c.Workflow)
		return c, err
	})
}

// startSQL moves locked queued tasks ($1) to running under a lease of $2
// until $3 ($4 now) and returns them with their input, as takeSQL does for
// the rows it picks: the rows are found by primary key from the IDs and
// each task is a lateral primary-key lookup, so no plan joins them.
const startSQL = `WITH q AS (
		UPDATE task_queue l SET state = 'running', attempt = l.attempt + 1, lease_epoch = l.lease_epoch + 1,
			lease_owner = $2, lease_expires_at = $3, started_at = coalesce(l.started_at, $4)
		WHERE l.id = ANY ($1) AND l.state = 'queued'
		RETURNING l.*
	)
	SELECT ` + claimCols + `, t.input, NOT t.trace_sampled FROM q
	CROSS JOIN LATERAL (SELECT * FROM tasks t WHERE t.id = q.id OFFSET 0) t`

// Start moves locked ready tasks to running and returns them with their
// input.
func (t *txn) Start(ids []string, owner string, expires, now time.Time) ([]*store.ClaimedTask, error) {
	rows, err := t.query(startSQL, ids, owner, ts(expires), ts(now))
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (*store.ClaimedTask, error) {
		c := &store.ClaimedTask{}
		var err error
		c.Task, err = engine.ScanTask(r, &c.Input, &c.TraceUnsampled)
		return c, err
	})
}

// TakeTokens takes a limit's starts in a tick (see docket_take_tokens in
// migration 007).
func (t *txn) TakeTokens(a engine.TokenAsk) (int, error) {
	var got int
	err := t.queryRow("SELECT docket_take_tokens($1, $2, $3, $4, $5)", a.Target.Scope, a.Target.Key, a.Tick, a.Cap, a.Want).Scan(&got)
	return got, err
}

// MarkThrottled records when claims found the limits exhausted. A rule
// row another claim is marking is skipped, never waited for: claims must
// not queue on it.
func (t *txn) MarkThrottled(targets []store.FlowTarget, now time.Time) error {
	scopes, keys := make([]string, len(targets)), make([]string, len(targets))
	for i, tg := range targets {
		scopes[i], keys[i] = tg.Scope, tg.Key
	}
	t.later(`UPDATE flow_rules f SET throttled_at = $3
		WHERE (f.scope, f.key) IN (
			SELECT r.scope, r.key FROM flow_rules r JOIN unnest($1::text[], $2::text[]) AS u (scope, key)
				ON r.scope = u.scope AND r.key = u.key
			WHERE r.throttled_at IS NULL OR r.throttled_at < $4
			ORDER BY r.scope, r.key
			FOR UPDATE OF r SKIP LOCKED)`, scopes, keys, ts(now), ts(now.Add(-time.Second)))
	return nil
}

func keyArrays(refs []engine.KeyRef) (tenants, workflows, keys []string) {
	tenants, workflows, keys = make([]string, len(refs)), make([]string, len(refs)), make([]string, len(refs))
	for i, r := range refs {
		tenants[i], workflows[i], keys[i] = r.Tenant, r.Workflow, r.Key
	}
	return tenants, workflows, keys
}

// LockKeys locks (creating) the keys' rows in the order given and reads
// their slots and their workflows' limits.
func (t *txn) LockKeys(refs []engine.KeyRef) (map[engine.KeyRef]engine.KeySlots, error) {
	tenants, workflows, keys := keyArrays(refs)
	rows, err := t.query(`WITH k AS (
			INSERT INTO concurrency_keys AS c (tenant, workflow, key)
			SELECT u.tenant, u.workflow, u.key FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS u (tenant, workflow, key, ord)
			ORDER BY u.ord
			ON CONFLICT (tenant, workflow, key) DO UPDATE SET active = c.active
			RETURNING c.tenant, c.workflow, c.key, c.active)
		SELECT k.tenant, k.workflow, k.key, k.active,
			coalesce((SELECT f.concurrency_per_key FROM flow_rules f WHERE f.scope = 'workflow' AND f.key = k.workflow), 1)
		FROM k`, tenants, workflows, keys)
	if err != nil {
		return nil, err
	}
	out := map[engine.KeyRef]engine.KeySlots{}
	var r engine.KeyRef
	var s engine.KeySlots
	_, err = pgx.ForEachRow(rows, []any{&r.Tenant, &r.Workflow, &r.Key, &s.Active, &s.Limit}, func() error {
		out[r] = s
		return nil
	})
	return out, err
}

// AddKeySlots adds to locked keys' slots.
func (t *txn) AddKeySlots(deltas []engine.KeyDelta) error {
	refs := make([]engine.KeyRef, len(deltas))
	ns := make([]int32, len(deltas))
	for i, d := range deltas {
		refs[i], ns[i] = d.KeyRef, int32(d.N)
	}
	tenants, workflows, keys := keyArrays(refs)
	t.later(`UPDATE concurrency_keys c SET active = c.active + u.n
		FROM unnest($1::text[], $2::text[], $3::text[], $4::int[]) AS u (tenant, workflow, key, n)
		WHERE c.tenant = u.tenant AND c.workflow = u.workflow AND c.key = u.key`, tenants, workflows, keys, ns)
	return nil
}

// ReleaseKeys frees slots and gives them to waiting tasks, in two steps.
//
// First, each slot a key's task freed goes straight to the key's next
// waiting task, without reading or locking the key's row: the key holds
// as many slots as before, so its count, which admissions read under the
// row's lock, stays exact, and a chain of tasks (a key at its limit, its
// next task started by the finish of the one before) costs no key row at
// all. A waiting task locked by another transaction (a cancel or a
// timeout, which end it, or another release) is skipped.
//
// Then the keys left with freed slots that no waiting task took, and the
// keys whose waiting task may take a free slot (N == 0: a retried task or
// one whose dependencies are done), are locked, in the engine's order
// (admissions and releases of one key take turns), their counts read,
// the room left given to their waiting tasks, and their rows written once,
// sent with the transaction's next statements.
func (t *txn) ReleaseKeys(deltas []engine.KeyDelta, now time.Time, start *store.HandOff) ([]engine.Moved, []*store.ClaimedTask, error) {
	var swap []engine.KeyRef
	var freed []int32
	for _, d := range deltas {
		if d.N < 0 {
			swap, freed = append(swap, d.KeyRef), append(freed, int32(-d.N))
		}
	}
	var out []engine.Moved
	var started []*store.ClaimedTask
	took := map[engine.KeyRef]int{} // slots the first step gave
	if len(swap) > 0 {
		moved, st, err := t.promoteWaiting(swap, freed, now, start)
		if err != nil {
			return nil, nil, err
		}
		out, started = moved, st
		countSlots(took, moved, st)
	}
	var rest []engine.KeyDelta
	for _, d := range deltas {
		if n := d.N + took[d.KeyRef]; n < 0 || d.N == 0 {
			rest = append(rest, engine.KeyDelta{KeyRef: d.KeyRef, N: n})
		}
	}
	if len(rest) == 0 {
		return out, started, nil
	}
	if start != nil {
		left := *start
		left.Limit -= len(started)
		left.Started = nil
		start = &left
	}
	moved, st, err := t.releaseLocked(rest, now, start)
	if err != nil {
		return nil, nil, err
	}
	return append(out, moved...), append(started, st...), nil
}

// releaseLocked is ReleaseKeys' second step: it locks the keys' rows, in
// the order given, applies the deltas, gives the room left to the keys'
// waiting tasks and writes the counts that changed.
func (t *txn) releaseLocked(deltas []engine.KeyDelta, now time.Time, start *store.HandOff) ([]engine.Moved, []*store.ClaimedTask, error) {
	refs := make([]engine.KeyRef, len(deltas))
	ns := make([]int32, len(deltas))
	for i, d := range deltas {
		refs[i], ns[i] = d.KeyRef, int32(d.N)
	}
	tenants, workflows, keys := keyArrays(refs)
	// One primary-key lookup per key, in the order given (OFFSET 0 keeps
	// it one): a join of the keys with the table, whose row count the
	// planner cannot know, was planned as a nested loop comparing every
	// key with every row.
	rows, err := t.query(`SELECT l.tenant, l.workflow, l.key, l.active, u.n,
			coalesce((SELECT f.concurrency_per_key FROM flow_rules f WHERE f.scope = 'workflow' AND f.key = l.workflow), 1)
		FROM unnest($1::text[], $2::text[], $3::text[], $4::int[]) AS u (tenant, workflow, key, n)
		CROSS JOIN LATERAL (
			SELECT c.tenant, c.workflow, c.key, c.active FROM concurrency_keys c
			WHERE c.tenant = u.tenant AND c.workflow = u.workflow AND c.key = u.key
			FOR UPDATE OFFSET 0) l`, tenants, workflows, keys, ns)
	if err != nil {
		return nil, nil, err
	}
	var locked, free []engine.KeyRef
	active := map[engine.KeyRef]int{} // after the release
	var stored []int                  // each locked key's count before it
	var room []int32
	var r engine.KeyRef
	var was, n, limit int
	if _, err := pgx.ForEachRow(rows, []any{&r.Tenant, &r.Workflow, &r.Key, &was, &n, &limit}, func() error {
		left := max(was+n, 0)
		locked, active[r], stored = append(locked, r), left, append(stored, was)
		if limit > left {
			free, room = append(free, r), append(room, int32(limit-left))
		}
		return nil
	}); err != nil {
		return nil, nil, err
	}
	var out []engine.Moved
	var started []*store.ClaimedTask
	if len(free) > 0 {
		if out, started, err = t.promoteWaiting(free, room, now, start); err != nil {
			return nil, nil, err
		}
	}
	countSlots(active, out, started)
	var set []engine.KeyDelta
	for i, k := range locked {
		if active[k] != stored[i] {
			set = append(set, engine.KeyDelta{KeyRef: k, N: active[k]})
		}
	}
	t.setKeySlots(set)
	return out, started, nil
}

// countSlots adds to counts, per key, the slots the tasks given one (moved)
// or started hold.
func countSlots(counts map[engine.KeyRef]int, moved []engine.Moved, started []*store.ClaimedTask) {
	for _, m := range moved {
		counts[engine.KeyRef{Tenant: m.Tenant, Workflow: m.Workflow, Key: m.Key}]++
	}
	for _, c := range started {
		counts[engine.KeyRef{Tenant: c.Task.Tenant, Workflow: c.Task.Workflow, Key: c.Task.ConcurrencyKey}]++
	}
}

// promoteWaitingSQL gives each key ($1–$3) its room ($4) of waiting tasks,
// at $5, in one statement. w locks the keys' first waiting tasks (skipping
// rows other transactions hold) with what the choice needs; c chooses
// those the finish starts, as engine.ChooseHandOff does: ready, in the
// hand-off's queue ($6), under no pause or rate limit of their tenant,
// workflow or pool, highest priority then oldest, at most $7; s starts
// them, leased to $8 until $9; h gives the others their slot (queued, or
// delayed until their run_at). Both updates find their rows by the
// addresses w read them at, which the rows' locks keep, with a TID scan:
// the IDs would cost a descent of the primary key each, and a join on
// them was planned as a nested loop comparing every row with every other
// (half a million comparisons for a finish of 700 keyed tasks). The
// answer is a row per task, started (s, with its record and input) or
// given its slot (h, from its live row: see heldCols).
const promoteWaitingSQL = `WITH r AS (
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::int[]) AS r (tenant, workflow, key, room)
	), w AS MATERIALIZED (
		SELECT q.tid, q.id, q.queue, q.priority, tk.run_at, tk.run_at IS NULL OR tk.run_at <= $5 AS ready,
			NOT EXISTS (SELECT 1 FROM flow_rules f WHERE f.paused OR f.rate_per_second IS NOT NULL)
			OR NOT EXISTS (SELECT 1 FROM flow_rules f WHERE f.scope = 'tenant' AND f.key = r.tenant
				AND (f.paused OR f.rate_per_second IS NOT NULL))
			AND NOT EXISTS (SELECT 1 FROM flow_rules f WHERE f.scope = 'workflow' AND f.key = r.workflow
				AND (f.paused OR f.rate_per_second IS NOT NULL))
			AND NOT EXISTS (SELECT 1 FROM flow_rules f WHERE f.scope = 'pool' AND f.key = tk.pool
				AND (f.paused OR f.rate_per_second IS NOT NULL)) AS unruled
		FROM r CROSS JOIN LATERAL (
			SELECT q.ctid AS tid, q.id, q.queue, q.priority FROM task_queue q
			WHERE q.tenant = r.tenant AND q.workflow = r.workflow AND q.concurrency_key = r.key AND NOT q.key_slot
				AND q.state = 'queued' AND q.deps_pending = 0
			ORDER BY q.priority DESC, q.id
			LIMIT r.room
			FOR UPDATE SKIP LOCKED) q
		CROSS JOIN LATERAL (SELECT tk.run_at, tk.pool FROM tasks tk WHERE tk.id = q.id OFFSET 0) tk
	), c AS MATERIALIZED (
		SELECT w.tid, w.id FROM w WHERE w.ready AND w.unruled AND w.queue = $6
		ORDER BY w.priority DESC, w.id LIMIT $7
	), s AS (
		UPDATE task_queue l SET key_slot = true, run_after = NULL, state = 'running', attempt = l.attempt + 1,
			lease_epoch = l.lease_epoch + 1, lease_owner = $8, lease_expires_at = $9, started_at = coalesce(l.started_at, $5)
		FROM c WHERE l.ctid = c.tid
		RETURNING l.*
	), h AS (
		UPDATE task_queue l SET key_slot = true, run_after = CASE WHEN w.ready THEN NULL ELSE w.run_at END
		FROM w WHERE l.ctid = w.tid AND w.id NOT IN (SELECT c.id FROM c)
		RETURNING l.*
	)
	SELECT ` + claimCols + `, t.input, NOT t.trace_sampled, true, q.queue, q.run_after IS NULL FROM s q
	CROSS JOIN LATERAL (SELECT * FROM tasks t WHERE t.id = q.id OFFSET 0) t
	UNION ALL
	SELECT ` + heldCols + `, NULL, false, false, q.queue, q.run_after IS NULL FROM h q`

// heldCols fills claimCols' places for a task a release gave its key's slot
// without starting it, from its live row alone: the release reports only
// its ID, tenant, workflow, key, queue and readiness (engine.Moved), so the
// columns that only the task's record holds (author, run_at, trace and
// configuration) are left empty rather than read.
const heldCols = `q.id, q.tenant, '', q.workflow, split_part(q.queue, '/', 1), q.state, q.priority, q.attempt,
	q.max_attempts, q.lease_epoch, q.deadline_at, q.created_at, NULL::timestamptz, q.started_at, NULL::timestamptz,
	'', '', NULL::bytea, q.error_code, q.error_message, q.deps_pending, q.concurrency_key, q.run_after`

// promoteWaiting gives each key's room to its first waiting tasks, and
// starts up to start.Limit of those ready in start.Queue when start is set,
// each only when no pause or rate limit of its tenant, workflow or pool is
// in force (read in the same statement, as Take reads them after its own):
// a task under one is started by a claim, which applies it. It returns the
// tasks given a slot and not started, and those started.
func (t *txn) promoteWaiting(free []engine.KeyRef, room []int32, now time.Time, start *store.HandOff) ([]engine.Moved, []*store.ClaimedTask, error) {
	tenants, workflows, keys := keyArrays(free)
	h := store.HandOff{} // none: every task is given its slot, none started
	if start != nil {
		h = *start
	}
	rows, err := t.query(promoteWaitingSQL, tenants, workflows, keys, room, ts(now),
		string(h.Queue), max(h.Limit, 0), h.Owner, ts(h.Expires))
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	var out []engine.Moved
	var started []*store.ClaimedTask
	for rows.Next() {
		c := &store.ClaimedTask{}
		var isStarted, ready bool
		var queue string
		task, err := engine.ScanTask(rows, &c.Input, &c.TraceUnsampled, &isStarted, &queue, &ready)
		if err != nil {
			return nil, nil, err
		}
		if isStarted {
			c.Task = task
			started = append(started, c)
			continue
		}
		out = append(out, engine.Moved{TaskID: task.ID, Tenant: task.Tenant, Workflow: task.Workflow,
			Key: task.ConcurrencyKey, Queue: store.Queue(queue), Ready: ready})
	}
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	return out, started, nil
}

// setKeySlots sets locked keys' slots (N is the count, not a change).
func (t *txn) setKeySlots(set []engine.KeyDelta) {
	if len(set) == 0 {
		return
	}
	refs := make([]engine.KeyRef, len(set))
	ns := make([]int32, len(set))
	for i, d := range set {
		refs[i], ns[i] = d.KeyRef, int32(d.N)
	}
	tenants, workflows, keys := keyArrays(refs)
	t.later(`UPDATE concurrency_keys c SET active = u.n
		FROM unnest($1::text[], $2::text[], $3::text[], $4::int[]) AS u (tenant, workflow, key, n)
		WHERE c.tenant = u.tenant AND c.workflow = u.workflow AND c.key = u.key`, tenants, workflows, keys, ns)
}

// WorkflowKeys returns the keys of a workflow with waiting tasks.
func (t *txn) WorkflowKeys(workflow string) ([]engine.KeyRef, error) {
	rows, err := t.query(`SELECT DISTINCT tenant, workflow, concurrency_key FROM task_queue
		WHERE workflow = $1 AND concurrency_key IS NOT NULL AND NOT key_slot
		ORDER BY 1, 2, 3`, workflow)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (engine.KeyRef, error) {
		var k engine.KeyRef
		err := r.Scan(&k.Tenant, &k.Workflow, &k.Key)
		return k, err
	})
}
