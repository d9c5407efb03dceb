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

// Start moves locked ready tasks to running and returns them with their
// input, as takeSQL does for the rows it picks.
func (t *txn) Start(ids []string, owner string, expires, now time.Time) ([]*store.ClaimedTask, error) {
	rows, err := t.query(`WITH q AS (
			UPDATE task_queue l SET state = 'running', attempt = l.attempt + 1, lease_epoch = l.lease_epoch + 1,
				lease_owner = $2, lease_expires_at = $3, started_at = coalesce(l.started_at, $4)
			WHERE l.id = ANY ($1) AND l.state = 'queued'
			RETURNING l.*
		)
		SELECT `+claimCols+`, t.input FROM q
		CROSS JOIN LATERAL (SELECT * FROM tasks t WHERE t.id = q.id OFFSET 0) t`, ids, owner, ts(expires), ts(now))
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (*store.ClaimedTask, error) {
		c := &store.ClaimedTask{}
		var err error
		c.Task, err = engine.ScanTask(r, &c.Input)
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

// ReleaseKeys frees slots and gives them to waiting tasks in two round
// trips whatever the number of keys. The keys' rows are locked first, in
// the engine's order: admissions and releases of one key take turns, so
// its count is exact. A waiting task locked by another transaction (a
// cancel or a timeout, which end it) is skipped.
func (t *txn) ReleaseKeys(deltas []engine.KeyDelta, now time.Time) ([]engine.Moved, error) {
	refs := make([]engine.KeyRef, len(deltas))
	ns := make([]int32, len(deltas))
	for i, d := range deltas {
		refs[i], ns[i] = d.KeyRef, int32(d.N)
	}
	tenants, workflows, keys := keyArrays(refs)
	rows, err := t.query(`WITH u AS (
			SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::int[]) AS u (tenant, workflow, key, n)
		), locked AS (
			SELECT c.tenant, c.workflow, c.key FROM concurrency_keys c
			JOIN u ON c.tenant = u.tenant AND c.workflow = u.workflow AND c.key = u.key
			ORDER BY c.tenant, c.workflow, c.key
			FOR UPDATE OF c
		)
		UPDATE concurrency_keys c SET active = GREATEST(c.active + u.n, 0)
		FROM u, locked l
		WHERE c.tenant = l.tenant AND c.workflow = l.workflow AND c.key = l.key
			AND u.tenant = l.tenant AND u.workflow = l.workflow AND u.key = l.key
		RETURNING c.tenant, c.workflow, c.key,
			GREATEST(coalesce((SELECT f.concurrency_per_key FROM flow_rules f WHERE f.scope = 'workflow' AND f.key = c.workflow), 1)
				- c.active, 0)`, tenants, workflows, keys, ns)
	if err != nil {
		return nil, err
	}
	var free []engine.KeyRef
	var room []int32
	var r engine.KeyRef
	var n int32
	if _, err := pgx.ForEachRow(rows, []any{&r.Tenant, &r.Workflow, &r.Key, &n}, func() error {
		if n > 0 {
			free, room = append(free, r), append(room, n)
		}
		return nil
	}); err != nil || len(free) == 0 {
		return nil, err
	}
	tenants, workflows, keys = keyArrays(free)
	rows, err = t.query(`WITH r AS (
			SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::int[]) AS r (tenant, workflow, key, room)
		), next AS (
			SELECT w.id FROM r CROSS JOIN LATERAL (
				SELECT q.id FROM task_queue q
				WHERE q.tenant = r.tenant AND q.workflow = r.workflow AND q.concurrency_key = r.key AND NOT q.key_slot
					AND q.state = 'queued'
				ORDER BY q.priority DESC, q.id
				LIMIT r.room
				FOR UPDATE SKIP LOCKED) w
		)
		UPDATE task_queue q SET key_slot = true, run_after = CASE WHEN t.run_at > $5 THEN t.run_at END
		FROM tasks t
		WHERE q.id IN (SELECT id FROM next) AND t.id = q.id
		RETURNING q.id, q.tenant, q.queue, q.run_after IS NULL, q.workflow, q.concurrency_key`,
		tenants, workflows, keys, room, ts(now))
	if err != nil {
		return nil, err
	}
	var out []engine.Moved
	woke := map[engine.KeyRef]int32{}
	var m engine.Moved
	var queue string
	if _, err := pgx.ForEachRow(rows, []any{&m.TaskID, &m.Tenant, &queue, &m.Ready, &m.Workflow, &m.Key}, func() error {
		m.Queue = store.Queue(queue)
		out = append(out, m)
		woke[engine.KeyRef{Tenant: m.Tenant, Workflow: m.Workflow, Key: m.Key}]++
		return nil
	}); err != nil {
		return nil, err
	}
	if len(woke) > 0 {
		var add []engine.KeyDelta
		for _, k := range free {
			if w := woke[k]; w > 0 {
				add = append(add, engine.KeyDelta{KeyRef: k, N: int(w)})
			}
		}
		if err := t.AddKeySlots(add); err != nil {
			return nil, err
		}
	}
	return out, nil
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
