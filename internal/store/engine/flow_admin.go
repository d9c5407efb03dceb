package engine

import (
	"context"
	"errors"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

const flowRuleCols = "scope, key, paused, refuse_submissions, coalesce(rate_per_second, 0), burst, coalesce(concurrency_per_key, 0), throttled_at"

func scanFlowRule(r Row) (*store.FlowRule, error) {
	f := &store.FlowRule{}
	return f, r.Scan(&f.Scope, &f.Key, &f.Paused, &f.RefuseSubmissions, &f.RatePerSecond, &f.Burst, &f.ConcurrencyPerKey,
		AtOrNil(&f.ThrottledAt))
}

func validTarget(t store.FlowTarget) bool {
	switch t.Scope {
	case store.ScopePool:
		return dockettype.Pool(t.Key).Valid()
	case store.ScopeTenant, store.ScopeWorkflow:
		return t.Key != ""
	}
	return false
}

// SetPaused pauses or resumes a target; see store.FlowControl. Claims
// read the pauses in their own transaction: none that starts after the
// commit starts a task of a paused target. Admissions read the pauses
// that refuse submissions with their gates: none that reads them after
// the commit admits a task of the target.
func (s *Store) SetPaused(ctx context.Context, p *store.SetPausedParams) ([]store.Pause, error) {
	if !validTarget(p.Target) || (p.RefuseSubmissions && !p.Paused) {
		return nil, store.Named("set_paused", store.ErrInvalid)
	}
	return update(ctx, s.b, "set_paused", func(q Querier) ([]store.Pause, error) {
		if _, err := q.Exec(`INSERT INTO flow_rules (scope, key, paused, refuse_submissions, updated_at) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (scope, key) DO UPDATE SET paused = excluded.paused, refuse_submissions = excluded.refuse_submissions,
				updated_at = excluded.updated_at`,
			p.Target.Scope, p.Target.Key, p.Paused, p.RefuseSubmissions, ts(p.Now)); err != nil {
			return nil, err
		}
		return all(q, func(r Row) (store.Pause, error) {
			var t store.Pause
			return t, r.Scan(&t.Scope, &t.Key, &t.RefuseSubmissions)
		}, "SELECT scope, key, refuse_submissions FROM flow_rules WHERE paused ORDER BY scope, key")
	})
}

// UpdateFlowRule changes a target's limits; see store.FlowControl. A
// higher concurrency per key gives the new slots to waiting tasks, in a
// transaction of its own after the change (releases give them too).
func (s *Store) UpdateFlowRule(ctx context.Context, p *store.UpdateFlowRuleParams) (*store.FlowRule, error) {
	bad := !validTarget(p.Target) || (p.RatePerSecond != nil && (*p.RatePerSecond < 1 || *p.RatePerSecond > MaxRate)) ||
		(p.Burst != nil && (*p.Burst < 0 || *p.Burst > MaxRate)) ||
		(p.ConcurrencyPerKey != nil && (*p.ConcurrencyPerKey < 1 || p.Target.Scope != store.ScopeWorkflow))
	if bad {
		return nil, store.Named("update_flow_rule", store.ErrInvalid)
	}
	rule, err := update(ctx, s.b, "update_flow_rule", func(q Querier) (*store.FlowRule, error) {
		if _, err := q.Exec(`INSERT INTO flow_rules (scope, key, updated_at) VALUES ($1, $2, $3)
			ON CONFLICT (scope, key) DO NOTHING`, p.Target.Scope, p.Target.Key, ts(p.Now)); err != nil {
			return nil, err
		}
		set := func(col string, v *int, clear bool, def any) error {
			switch {
			case clear:
				_, err := q.Exec("UPDATE flow_rules SET "+col+" = $3, updated_at = $4 WHERE scope = $1 AND key = $2",
					p.Target.Scope, p.Target.Key, def, ts(p.Now))
				return err
			case v != nil:
				_, err := q.Exec("UPDATE flow_rules SET "+col+" = $3, updated_at = $4 WHERE scope = $1 AND key = $2",
					p.Target.Scope, p.Target.Key, *v, ts(p.Now))
				return err
			}
			return nil
		}
		var none *int
		if err := set("rate_per_second", p.RatePerSecond, p.ClearRate, none); err != nil {
			return nil, err
		}
		if err := set("burst", p.Burst, p.ClearBurst, 0); err != nil {
			return nil, err
		}
		if err := set("concurrency_per_key", p.ConcurrencyPerKey, p.ClearConcurrency, none); err != nil {
			return nil, err
		}
		return one(q, scanFlowRule, "SELECT "+flowRuleCols+" FROM flow_rules WHERE scope = $1 AND key = $2",
			p.Target.Scope, p.Target.Key)
	})
	if err != nil {
		return nil, err
	}
	if p.Target.Scope == store.ScopeWorkflow && (p.ConcurrencyPerKey != nil || p.ClearConcurrency) {
		if err := s.fillKeys(ctx, p.Target.Key, p.Now); err != nil {
			return nil, err
		}
	}
	return rule, nil
}

// MaxRate bounds rates and bursts; see store.MaxRate.
const MaxRate = store.MaxRate

// fillKeys gives the free slots of a workflow's keys to their waiting
// tasks.
func (s *Store) fillKeys(ctx context.Context, workflow string, now time.Time) error {
	return s.b.Write(ctx, "fill_keys", func(tx Tx) error {
		refs, err := tx.WorkflowKeys(workflow)
		if err != nil || len(refs) == 0 {
			return err
		}
		c := newChanges()
		c.keys = map[KeyRef]int{}
		for _, r := range refs {
			c.keys[r] = 0
		}
		return c.flush(tx, now)
	})
}

// GetFlowRule reads a target's rule (no rule: no limits).
func (s *Store) GetFlowRule(ctx context.Context, t store.FlowTarget) (*store.FlowRule, error) {
	r, err := read(ctx, s.b, "get_flow_rule", func(q Querier) (*store.FlowRule, error) {
		return one(q, scanFlowRule, "SELECT "+flowRuleCols+" FROM flow_rules WHERE scope = $1 AND key = $2", t.Scope, t.Key)
	})
	if errors.Is(err, store.ErrNotFound) {
		return &store.FlowRule{FlowTarget: t}, nil
	}
	return r, err
}

// ListFlowRules reads every rule.
func (s *Store) ListFlowRules(ctx context.Context) ([]*store.FlowRule, error) {
	return read(ctx, s.b, "list_flow_rules", func(q Querier) ([]*store.FlowRule, error) {
		return all(q, scanFlowRule, "SELECT "+flowRuleCols+" FROM flow_rules ORDER BY scope, key")
	})
}

// flowWaitingSQL counts the ready tasks a pause holds ($1: 'paused') and
// those a rate limit throttled since $2 holds ($1: 'rate_limit'), and the
// tasks waiting on their key. The first two read only when a rule exists.
const flowWaitingSQL = `SELECT 'concurrency_key', count(*) FROM task_queue
		WHERE concurrency_key IS NOT NULL AND NOT key_slot AND state = 'queued'
	UNION ALL
	SELECT 'paused', count(*) FROM task_queue q
		WHERE EXISTS (SELECT 1 FROM flow_rules WHERE paused) AND q.state = 'queued' AND q.run_after IS NULL
			AND EXISTS (SELECT 1 FROM flow_rules f WHERE f.paused AND (
				(f.scope = 'pool' AND (q.queue = f.key OR q.queue LIKE f.key || '/%'))
				OR (f.scope = 'tenant' AND f.key = q.tenant) OR (f.scope = 'workflow' AND f.key = q.workflow)))
	UNION ALL
	SELECT 'rate_limit', count(*) FROM task_queue q
		WHERE EXISTS (SELECT 1 FROM flow_rules WHERE throttled_at >= $1) AND q.state = 'queued' AND q.run_after IS NULL
			AND NOT EXISTS (SELECT 1 FROM flow_rules f WHERE f.paused AND (
				(f.scope = 'pool' AND (q.queue = f.key OR q.queue LIKE f.key || '/%'))
				OR (f.scope = 'tenant' AND f.key = q.tenant) OR (f.scope = 'workflow' AND f.key = q.workflow)))
			AND EXISTS (SELECT 1 FROM flow_rules f WHERE f.rate_per_second IS NOT NULL AND f.throttled_at >= $1 AND (
				(f.scope = 'tenant' AND f.key = q.tenant) OR (f.scope = 'workflow' AND f.key = q.workflow)))`

// FlowWaiting counts the tasks held back; see store.FlowControl.
func (s *Store) FlowWaiting(ctx context.Context, now time.Time) (map[string]int, error) {
	return read(ctx, s.b, "flow_waiting", func(q Querier) (map[string]int, error) {
		out := map[string]int{store.WaitingOnPaused: 0, store.WaitingOnRateLimit: 0, store.WaitingOnConcurrencyKey: 0}
		type count struct {
			why string
			n   int
		}
		counts, err := all(q, func(r Row) (count, error) {
			var c count
			return c, r.Scan(&c.why, &c.n)
		}, flowWaitingSQL, ts(now.Add(-throttledRecent)))
		for _, c := range counts {
			out[c.why] = c.n
		}
		return out, err
	})
}

// annotate says why each ready queued task among tasks waits when a pause
// or a rate limit holds it (the scan already said run_at and
// concurrency_key). It reads the rules only when there is such a task.
func annotate(q Querier, tasks []*dockettype.Task, now time.Time) error {
	var ready []*dockettype.Task
	for _, t := range tasks {
		if t.State == dockettype.StateQueued && t.WaitingOn == "" {
			ready = append(ready, t)
		}
	}
	if len(ready) == 0 {
		return nil
	}
	rules, err := all(q, scanFlowRule, "SELECT "+flowRuleCols+" FROM flow_rules WHERE paused OR rate_per_second IS NOT NULL")
	if err != nil || len(rules) == 0 {
		return err
	}
	byTarget := map[store.FlowTarget]*store.FlowRule{}
	for _, r := range rules {
		byTarget[r.FlowTarget] = r
	}
	get := func(scope, key string) *store.FlowRule { return byTarget[store.FlowTarget{Scope: scope, Key: key}] }
	throttled := func(r *store.FlowRule) bool {
		return r != nil && r.RatePerSecond > 0 && r.ThrottledAt != nil && !now.IsZero() && now.Sub(*r.ThrottledAt) < throttledRecent
	}
	for _, t := range ready {
		pool, tenant, wf := get(store.ScopePool, string(t.Pool)), get(store.ScopeTenant, t.Tenant), get(store.ScopeWorkflow, t.Workflow)
		switch {
		case (pool != nil && pool.Paused) || (tenant != nil && tenant.Paused) || (wf != nil && wf.Paused):
			t.WaitingOn = Waiting(store.WaitingOnPaused)
		case throttled(tenant) || throttled(wf):
			t.WaitingOn = Waiting(store.WaitingOnRateLimit)
		}
	}
	return nil
}
