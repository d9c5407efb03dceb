package queue

import (
	"context"
	"errors"
	"fmt"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// Flow control (docs/flow-control.md): pauses, rate limits on starts and
// the concurrency per key. The rules live in the store, which every claim
// reads in its own transaction, so a change holds on every node from its
// commit on; this node's claimers are woken at once so that a resume or a
// raised limit starts work without waiting for a poll.

// FlowChange is a change of one target's limits. Nil fields keep their
// value; Clear* removes a limit.
type FlowChange struct {
	Target                 store.FlowTarget
	RatePerSecond, Burst   *int
	ClearRate, ClearBurst  bool
	ConcurrencyPerKey      *int
	ClearConcurrencyPerKey bool
}

func flowInvalid(msg string) error { return dockettype.NewError(dockettype.CodeInvalidRequest, msg) }

// checkTarget refuses a target that names nothing: a pool that does not
// exist, an unknown workflow.
func (s *Service) checkTarget(ctx context.Context, t store.FlowTarget) error {
	switch t.Scope {
	case store.ScopePool:
		if !dockettype.Pool(t.Key).Valid() {
			return flowInvalid(`pool must be "online" or "offline"`)
		}
	case store.ScopeTenant:
		if !validTenant(t.Key) {
			return flowInvalid("the tenant must be 1-64 characters of [A-Za-z0-9._@-]")
		}
	case store.ScopeWorkflow:
		if _, err := s.runtime.Resolve(ctx, t.Key); err != nil {
			if de, ok := errors.AsType[*dockettype.Error](err); ok {
				return de
			}
			return s.storeFailure(ctx, "resolve_workflow", err)
		}
	default:
		return flowInvalid("name one of pool, tenant or workflow")
	}
	return nil
}

// validTenant is auth.ValidName without importing auth here.
func validTenant(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, c := range []byte(s) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '@' || c == '-'
		if !ok {
			return false
		}
	}
	return true
}

// Pause pauses a pool, a tenant or a workflow and returns everything
// paused. Running tasks finish; submissions are still admitted to wait,
// or with refuseSubmissions refused (submissions_paused). Pausing a paused
// target again sets its refuseSubmissions.
func (s *Service) Pause(ctx context.Context, t store.FlowTarget, refuseSubmissions bool) ([]store.Pause, error) {
	return s.setFlowPaused(ctx, &store.SetPausedParams{Target: t, Paused: true, RefuseSubmissions: refuseSubmissions})
}

// Resume resumes a pool, a tenant or a workflow and returns everything
// still paused: its waiting tasks start in the usual order, and its
// submissions are admitted again.
func (s *Service) Resume(ctx context.Context, t store.FlowTarget) ([]store.Pause, error) {
	return s.setFlowPaused(ctx, &store.SetPausedParams{Target: t})
}

func (s *Service) setFlowPaused(ctx context.Context, p *store.SetPausedParams) ([]store.Pause, error) {
	if err := s.checkTarget(ctx, p.Target); err != nil {
		return nil, err
	}
	qctx, cancel := s.query(ctx)
	defer cancel()
	p.Now = s.clock.Now()
	out, err := s.store.SetPaused(qctx, p)
	if err != nil {
		return nil, s.storeFailure(ctx, "set_paused", err)
	}
	if !p.Paused {
		s.wakeAll()
	}
	return out, nil
}

// UpdateFlow changes a target's limits and returns its rule.
func (s *Service) UpdateFlow(ctx context.Context, c *FlowChange) (*store.FlowRule, error) {
	if err := s.checkTarget(ctx, c.Target); err != nil {
		return nil, err
	}
	bounded := func(name string, v *int, lo int) error {
		if v != nil && (*v < lo || *v > store.MaxRate) {
			return flowInvalid(fmt.Sprintf("%s must be between %d and %d (null removes it)", name, lo, store.MaxRate))
		}
		return nil
	}
	for _, err := range []error{bounded("rate_per_second", c.RatePerSecond, 1), bounded("burst", c.Burst, 0),
		bounded("concurrency_per_key", c.ConcurrencyPerKey, 1)} {
		if err != nil {
			return nil, err
		}
	}
	if (c.ConcurrencyPerKey != nil || c.ClearConcurrencyPerKey) && c.Target.Scope != store.ScopeWorkflow {
		return nil, flowInvalid("concurrency_per_key is a workflow's")
	}
	qctx, cancel := s.query(ctx)
	defer cancel()
	rule, err := s.store.UpdateFlowRule(qctx, &store.UpdateFlowRuleParams{Now: s.clock.Now(), Target: c.Target,
		RatePerSecond: c.RatePerSecond, ClearRate: c.ClearRate, Burst: c.Burst, ClearBurst: c.ClearBurst,
		ConcurrencyPerKey: c.ConcurrencyPerKey, ClearConcurrency: c.ClearConcurrencyPerKey})
	if err != nil {
		return nil, s.storeFailure(ctx, "update_flow_rule", err)
	}
	s.wakeAll()
	return rule, nil
}

// FlowRule returns a target's rule (no rule: no limits).
func (s *Service) FlowRule(ctx context.Context, t store.FlowTarget) (*store.FlowRule, error) {
	qctx, cancel := s.query(ctx)
	defer cancel()
	r, err := s.store.GetFlowRule(qctx, t)
	if err != nil {
		return nil, s.storeFailure(ctx, "get_flow_rule", err)
	}
	return r, nil
}

// FlowRules returns every rule, by scope then key.
func (s *Service) FlowRules(ctx context.Context) ([]*store.FlowRule, error) {
	qctx, cancel := s.query(ctx)
	defer cancel()
	rs, err := s.store.ListFlowRules(qctx)
	if err != nil {
		return nil, s.storeFailure(ctx, "list_flow_rules", err)
	}
	return rs, nil
}
