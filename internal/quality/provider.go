package quality

import (
	"context"
	"errors"
)

// Provider supplies versioned rule sets. Admission asks CurrentVersion and
// pins the answer on the task; the workflow later asks Load for exactly
// that version, so publishing a new version never changes how an admitted
// task is judged.
type Provider interface {
	// CurrentVersion returns the version new tasks should pin.
	CurrentVersion(ctx context.Context) (string, error)
	// Load returns the rule set of version, which never changes once
	// published.
	Load(ctx context.Context, version string) (*RuleSet, error)
}

var (
	// ErrUnknownVersion: the provider has no rule set of that version.
	ErrUnknownVersion = errors.New("quality: unknown rule set version")
	// ErrNoPublishedVersion: no rule set has been published yet. Pilot mode
	// refuses to start on it.
	ErrNoPublishedVersion = errors.New("quality: no published rule set")
	// ErrCorruptRuleSet: a stored rule set does not parse or does not match
	// its recorded hash. Retrying cannot help.
	ErrCorruptRuleSet = errors.New("quality: corrupt stored rule set")
)
