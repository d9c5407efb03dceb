package quality

import (
	"context"
	"fmt"
)

// seedProvider serves the frozen seed rules under SeedVersion.
type seedProvider struct{}

// NewSeedProvider returns the demo-mode provider: its current version is
// always SeedVersion and it loads nothing else.
func NewSeedProvider() Provider { return seedProvider{} }

func (seedProvider) CurrentVersion(context.Context) (string, error) { return SeedVersion, nil }

func (seedProvider) Load(_ context.Context, version string) (*RuleSet, error) {
	if version != SeedVersion {
		return nil, fmt.Errorf("load %q: %w", version, ErrUnknownVersion)
	}
	return seed, nil
}
