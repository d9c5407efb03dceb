package quality

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/docket-dev/docket/internal/store"
)

// PublishedSource is the part of the store the published provider reads.
type PublishedSource interface {
	GetRuleSet(ctx context.Context, version string) (*store.RuleSet, error)
	LatestRuleSet(ctx context.Context) (*store.RuleSet, error)
}

// publishedProvider serves rule sets published to the store. Parsed
// versions are cached forever: published versions are immutable, so a
// version never has to be read or compiled twice.
type publishedProvider struct {
	src PublishedSource

	mu     sync.Mutex
	parsed map[string]*RuleSet
}

// NewPublishedProvider returns the pilot-mode provider, backed by rule sets
// published with `docket rules publish`. It is safe for concurrent use.
func NewPublishedProvider(src PublishedSource) Provider {
	return &publishedProvider{src: src, parsed: make(map[string]*RuleSet)}
}

// CurrentVersion asks the store each time, so a newly published version
// applies to the next admission on every node without a restart.
func (p *publishedProvider) CurrentVersion(ctx context.Context) (string, error) {
	latest, err := p.src.LatestRuleSet(ctx)
	if errors.Is(err, store.ErrNotFound) {
		return "", ErrNoPublishedVersion
	}
	if err != nil {
		return "", fmt.Errorf("latest rule set: %w", err)
	}
	return latest.Version, nil
}

func (p *publishedProvider) Load(ctx context.Context, version string) (*RuleSet, error) {
	p.mu.Lock()
	rs, ok := p.parsed[version]
	p.mu.Unlock()
	if ok {
		return rs, nil
	}

	// Read and parse outside the lock so a slow store cannot block loads
	// of versions already cached. Two loads of one new version may race;
	// both parse the same immutable body, and the first stored wins.
	stored, err := p.src.GetRuleSet(ctx, version)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("load %q: %w", version, ErrUnknownVersion)
	}
	if err != nil {
		return nil, fmt.Errorf("load %q: %w", version, err)
	}
	rs, err = Parse(stored.Body)
	if err != nil {
		return nil, fmt.Errorf("load %q: %w: %v", version, ErrCorruptRuleSet, err)
	}
	// A mismatch means the body is not what was published and pinned.
	if rs.hash != stored.Hash {
		return nil, fmt.Errorf("load %q: %w: hash %s, stored %s", version, ErrCorruptRuleSet, rs.hash, stored.Hash)
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	if cached, ok := p.parsed[version]; ok {
		return cached, nil
	}
	p.parsed[version] = rs
	return rs, nil
}
