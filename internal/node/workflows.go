package node

import (
	"context"
	"errors"
	"fmt"

	"github.com/jonboulle/clockwork"

	"github.com/docket-dev/docket/internal/demo"
	"github.com/docket-dev/docket/internal/quality"
	"github.com/docket-dev/docket/internal/store"
)

// ErrNoPublishedRules is returned by New in pilot mode when no rule set
// version has been published (see `docket rules publish`).
var ErrNoPublishedRules = errors.New("pilot mode needs a published rule set version: run `docket rules publish FILE` first")

// registerWorkflows adds the built-in workflows of cfg's mode to
// cfg.Workflows and returns the rule set provider tasks pin their
// configuration version from: demo mode judges by the frozen seed rules
// and adds the demo workflows (unless cfg.NoDemoWorkflows); pilot mode
// judges by the published rule set versions, and needs one.
func registerWorkflows(ctx context.Context, cfg *Config, st store.Store, clock clockwork.Clock) (quality.Provider, error) {
	var provider quality.Provider
	switch cfg.Mode {
	case ModeDemo:
		provider = quality.NewSeedProvider()
		if !cfg.NoDemoWorkflows {
			if err := demo.Register(cfg.Workflows, clock); err != nil {
				return nil, err
			}
		}
	case ModePilot:
		provider = quality.NewPublishedProvider(st)
		if _, err := provider.CurrentVersion(ctx); err != nil {
			if errors.Is(err, quality.ErrNoPublishedVersion) {
				return nil, ErrNoPublishedRules
			}
			return nil, fmt.Errorf("pilot mode: read the published rule set: %w", err)
		}
	}
	if err := quality.Register(cfg.Workflows, provider); err != nil {
		return nil, err
	}
	return provider, nil
}
