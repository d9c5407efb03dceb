package faultstore

import (
	"context"
	"time"

	"github.com/docket-dev/docket/internal/store"
)

func (s *Store) SetPaused(ctx context.Context, p *store.SetPausedParams) ([]store.Pause, error) {
	if err := s.before(ctx, "set_paused"); err != nil {
		return nil, err
	}
	return s.inner.SetPaused(ctx, p)
}

func (s *Store) UpdateFlowRule(ctx context.Context, p *store.UpdateFlowRuleParams) (*store.FlowRule, error) {
	if err := s.before(ctx, "update_flow_rule"); err != nil {
		return nil, err
	}
	return s.inner.UpdateFlowRule(ctx, p)
}

func (s *Store) GetFlowRule(ctx context.Context, t store.FlowTarget) (*store.FlowRule, error) {
	if err := s.before(ctx, "get_flow_rule"); err != nil {
		return nil, err
	}
	return s.inner.GetFlowRule(ctx, t)
}

func (s *Store) ListFlowRules(ctx context.Context) ([]*store.FlowRule, error) {
	if err := s.before(ctx, "list_flow_rules"); err != nil {
		return nil, err
	}
	return s.inner.ListFlowRules(ctx)
}

func (s *Store) FlowWaiting(ctx context.Context, now time.Time) (map[string]int, error) {
	if err := s.before(ctx, "flow_waiting"); err != nil {
		return nil, err
	}
	return s.inner.FlowWaiting(ctx, now)
}
