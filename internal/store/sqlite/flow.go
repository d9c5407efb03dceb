package sqlite

import (
	"database/sql"
	"time"

	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/store/engine"
)

// Candidates reads a tenant's first ready tasks, leaving out workflows
// (the one write transaction holds every row).
func (t *txn) Candidates(queue store.Queue, tenant string, limit int, exceptWorkflows []string) ([]engine.Candidate, error) {
	if exceptWorkflows == nil {
		exceptWorkflows = []string{}
	}
	rows, err := t.tx.QueryContext(t.ctx, `SELECT id, workflow FROM task_queue
		WHERE queue = ? AND tenant = ? AND state = 'queued' AND run_after IS NULL
			AND workflow NOT IN (SELECT value FROM json_each(?))
		ORDER BY priority DESC, id LIMIT ?`, string(queue), tenant, jsonArg(exceptWorkflows), limit)
	if err != nil {
		return nil, err
	}
	return collect(rows, func(r *sql.Rows) (engine.Candidate, error) {
		var c engine.Candidate
		err := r.Scan(&c.ID, &c.Workflow)
		return c, err
	})
}

// Start moves ready tasks to running and reads them with their input.
func (t *txn) Start(ids []string, owner string, expires, now time.Time) ([]*store.ClaimedTask, error) {
	list := jsonArg(ids)
	if err := t.exec(`UPDATE task_queue SET state = 'running', attempt = attempt + 1, lease_epoch = lease_epoch + 1,
			lease_owner = ?, lease_expires_at = ?, started_at = coalesce(started_at, ?)
		WHERE id IN (SELECT value FROM json_each(?)) AND state = 'queued'`, owner, ms(expires), ms(now), list); err != nil {
		return nil, err
	}
	rows, err := t.tx.QueryContext(t.ctx, `SELECT `+engine.TaskColumns+`, t.input, NOT t.trace_sampled
		FROM task_queue q JOIN tasks t ON t.id = q.id LEFT JOIN task_results r ON r.task_id = q.id
		WHERE q.id IN (SELECT value FROM json_each(?)) AND q.state = 'running'`, list)
	if err != nil {
		return nil, err
	}
	return collect(rows, func(r *sql.Rows) (*store.ClaimedTask, error) {
		c := &store.ClaimedTask{}
		var err error
		c.Task, err = engine.ScanTask(r, &c.Input, &c.TraceUnsampled)
		return c, err
	})
}

// tokenRing is how many ticks of a limit have a row (see the PostgreSQL
// migration 007).
const tokenRing = 128

// TakeTokens takes a limit's starts in a tick: one row per limit and
// tick of the ring, as one writer needs no slots.
func (t *txn) TakeTokens(a engine.TokenAsk) (int, error) {
	ring := a.Tick % tokenRing
	var tick int64
	var used int
	err := t.tx.QueryRowContext(t.ctx, "SELECT tick, used FROM flow_tokens WHERE scope = ? AND key = ? AND ring = ? AND slot = 0",
		a.Target.Scope, a.Target.Key, ring).Scan(&tick, &used)
	switch {
	case err == sql.ErrNoRows || (err == nil && tick < a.Tick):
		used = 0
	case err != nil:
		return 0, err
	case tick > a.Tick:
		return 0, nil // a later tick's row: this claim's clock is behind
	}
	n := min(a.Cap-used, a.Want)
	if n <= 0 {
		return 0, nil
	}
	return n, t.exec(`INSERT INTO flow_tokens (scope, key, ring, slot, tick, used) VALUES (?, ?, ?, 0, ?, ?)
		ON CONFLICT (scope, key, ring, slot) DO UPDATE SET tick = excluded.tick, used = excluded.used`,
		a.Target.Scope, a.Target.Key, ring, a.Tick, used+n)
}

// MarkThrottled records when claims found the limits exhausted.
func (t *txn) MarkThrottled(targets []store.FlowTarget, now time.Time) error {
	for _, tg := range targets {
		if err := t.exec("UPDATE flow_rules SET throttled_at = ? WHERE scope = ? AND key = ?", ms(now), tg.Scope, tg.Key); err != nil {
			return err
		}
	}
	return nil
}

// LockKeys creates the keys' rows and reads their slots and limits.
func (t *txn) LockKeys(refs []engine.KeyRef) (map[engine.KeyRef]engine.KeySlots, error) {
	out := map[engine.KeyRef]engine.KeySlots{}
	for _, r := range refs {
		var s engine.KeySlots
		err := t.tx.QueryRowContext(t.ctx, `INSERT INTO concurrency_keys (tenant, workflow, key) VALUES (?1, ?2, ?3)
			ON CONFLICT (tenant, workflow, key) DO UPDATE SET active = active
			RETURNING active, coalesce((SELECT f.concurrency_per_key FROM flow_rules f WHERE f.scope = 'workflow' AND f.key = ?2), 1)`,
			r.Tenant, r.Workflow, r.Key).Scan(&s.Active, &s.Limit)
		if err != nil {
			return nil, err
		}
		out[r] = s
	}
	return out, nil
}

// AddKeySlots adds to keys' slots.
func (t *txn) AddKeySlots(deltas []engine.KeyDelta) error {
	for _, d := range deltas {
		if err := t.exec("UPDATE concurrency_keys SET active = active + ? WHERE tenant = ? AND workflow = ? AND key = ?",
			d.N, d.Tenant, d.Workflow, d.Key); err != nil {
			return err
		}
	}
	return nil
}

// ReleaseKeys frees slots and gives them to waiting tasks.
func (t *txn) ReleaseKeys(deltas []engine.KeyDelta, now time.Time, start *store.HandOff) ([]engine.Moved, []*store.ClaimedTask, error) {
	out, err := t.releaseKeys(deltas, now)
	if err != nil {
		return nil, nil, err
	}
	if start == nil || len(out) == 0 {
		moved := make([]engine.Moved, len(out))
		for i, c := range out {
			moved[i] = c.Moved
		}
		return moved, nil, nil
	}
	// The one writer reads the rules in this transaction: a task under a
	// pause or a rate limit of its tenant, workflow or pool is not handed
	// off (a claim, which applies them, starts it).
	rows, err := t.tx.QueryContext(t.ctx, `SELECT scope, key FROM flow_rules WHERE paused OR rate_per_second IS NOT NULL`)
	if err != nil {
		return nil, nil, err
	}
	ruled, err := collect(rows, func(r *sql.Rows) (store.FlowTarget, error) {
		var tg store.FlowTarget
		err := r.Scan(&tg.Scope, &tg.Key)
		return tg, err
	})
	if err != nil {
		return nil, nil, err
	}
	under := make(map[store.FlowTarget]bool, len(ruled))
	for _, tg := range ruled {
		under[tg] = true
	}
	for i := range out {
		c := &out[i]
		c.Ruled = under[store.FlowTarget{Scope: store.ScopePool, Key: string(c.Queue.Pool())}] ||
			under[store.FlowTarget{Scope: store.ScopeTenant, Key: c.Tenant}] ||
			under[store.FlowTarget{Scope: store.ScopeWorkflow, Key: c.Workflow}]
	}
	starting := map[int]bool{}
	var ids []string
	for _, i := range engine.ChooseHandOff(out, start) {
		starting[i], ids = true, append(ids, out[i].TaskID)
	}
	var moved []engine.Moved
	for i, c := range out {
		if !starting[i] {
			moved = append(moved, c.Moved)
		}
	}
	if len(ids) == 0 {
		return moved, nil, nil
	}
	started, err := t.Start(ids, start.Owner, start.Expires, now)
	if err != nil {
		return nil, nil, err
	}
	return moved, started, nil
}

// releaseKeys applies the deltas and promotes the keys' next waiting tasks.
func (t *txn) releaseKeys(deltas []engine.KeyDelta, now time.Time) ([]engine.HandOffCandidate, error) {
	var out []engine.HandOffCandidate
	for _, d := range deltas {
		var room int
		err := t.tx.QueryRowContext(t.ctx, `UPDATE concurrency_keys SET active = max(active + ?4, 0)
			WHERE tenant = ?1 AND workflow = ?2 AND key = ?3
			RETURNING max(coalesce((SELECT f.concurrency_per_key FROM flow_rules f WHERE f.scope = 'workflow' AND f.key = ?2), 1)
				- active, 0)`, d.Tenant, d.Workflow, d.Key, d.N).Scan(&room)
		if err == sql.ErrNoRows {
			continue
		}
		if err != nil {
			return nil, err
		}
		if room == 0 {
			continue
		}
		rows, err := t.tx.QueryContext(t.ctx, `UPDATE task_queue AS q SET key_slot = 1,
				run_after = CASE WHEN (SELECT t.run_at FROM tasks t WHERE t.id = q.id) > ?4
					THEN (SELECT t.run_at FROM tasks t WHERE t.id = q.id) END
			WHERE q.id IN (SELECT id FROM task_queue
				WHERE tenant = ?1 AND workflow = ?2 AND concurrency_key = ?3 AND key_slot = 0 AND state = 'queued'
					AND deps_pending = 0
				ORDER BY priority DESC, id LIMIT ?5)
			RETURNING id, tenant, queue, run_after IS NULL, priority`, d.Tenant, d.Workflow, d.Key, ms(now), room)
		if err != nil {
			return nil, err
		}
		woke, err := collect(rows, func(r *sql.Rows) (engine.HandOffCandidate, error) {
			var c engine.HandOffCandidate
			var queue string
			err := r.Scan(&c.TaskID, &c.Tenant, &queue, &c.Ready, &c.Priority)
			c.Queue, c.Workflow, c.Key = store.Queue(queue), d.Workflow, d.Key
			return c, err
		})
		if err != nil {
			return nil, err
		}
		if len(woke) > 0 {
			if err := t.exec("UPDATE concurrency_keys SET active = active + ? WHERE tenant = ? AND workflow = ? AND key = ?",
				len(woke), d.Tenant, d.Workflow, d.Key); err != nil {
				return nil, err
			}
		}
		out = append(out, woke...)
	}
	return out, nil
}

// WorkflowKeys returns the keys of a workflow with waiting tasks.
func (t *txn) WorkflowKeys(workflow string) ([]engine.KeyRef, error) {
	rows, err := t.tx.QueryContext(t.ctx, `SELECT DISTINCT tenant, workflow, concurrency_key FROM task_queue
		WHERE workflow = ? AND concurrency_key IS NOT NULL AND key_slot = 0 ORDER BY 1, 2, 3`, workflow)
	if err != nil {
		return nil, err
	}
	return collect(rows, func(r *sql.Rows) (engine.KeyRef, error) {
		var k engine.KeyRef
		err := r.Scan(&k.Tenant, &k.Workflow, &k.Key)
		return k, err
	})
}
