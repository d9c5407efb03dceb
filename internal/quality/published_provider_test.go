package quality

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/docket-dev/docket/internal/store"
)

// fakeSource is an in-memory PublishedSource.
type fakeSource struct {
	mu       sync.Mutex
	versions []*store.RuleSet
	gets     int   // GetRuleSet calls
	err      error // returned by every call when set
}

var _ PublishedSource = (*fakeSource)(nil)

// publish stores body as the next version, hashed as the CLI would.
func (s *fakeSource) publish(t *testing.T, body string) string {
	t.Helper()
	h, err := Hash([]byte(body))
	if err != nil {
		t.Fatalf("Hash: %v", err)
	}
	return s.publishWithHash(body, h)
}

func (s *fakeSource) publishWithHash(body, hash string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := fmt.Sprintf("v%d", len(s.versions)+1)
	s.versions = append(s.versions, &store.RuleSet{Version: v, Hash: hash, Body: []byte(body)})
	return v
}

func (s *fakeSource) GetRuleSet(_ context.Context, version string) (*store.RuleSet, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gets++
	if s.err != nil {
		return nil, s.err
	}
	for _, rs := range s.versions {
		if rs.Version == version {
			return rs, nil
		}
	}
	return nil, store.ErrNotFound
}

func (s *fakeSource) LatestRuleSet(context.Context) (*store.RuleSet, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return nil, s.err
	}
	if len(s.versions) == 0 {
		return nil, store.ErrNotFound
	}
	return s.versions[len(s.versions)-1], nil
}

const (
	rulesV1 = `{"name": "r", "rules": [{"id": "short", "kind": "length", "max": 5}]}`
	rulesV2 = `{"name": "r", "rules": [{"id": "long", "kind": "length", "max": 500}, {"id": "json", "kind": "valid_json"}]}`
)

func TestPublishedProviderPinsVersions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := &fakeSource{}
	p := NewPublishedProvider(src)

	if _, err := p.CurrentVersion(ctx); !errors.Is(err, ErrNoPublishedVersion) {
		t.Fatalf("CurrentVersion() with nothing published: error = %v, want ErrNoPublishedVersion", err)
	}

	src.publish(t, rulesV1)
	if v, err := p.CurrentVersion(ctx); err != nil || v != "v1" {
		t.Fatalf("CurrentVersion() = %q, %v; want v1", v, err)
	}
	v1, err := p.Load(ctx, "v1")
	if err != nil {
		t.Fatalf("Load(v1): %v", err)
	}

	src.publish(t, rulesV2)
	if v, err := p.CurrentVersion(ctx); err != nil || v != "v2" {
		t.Fatalf("CurrentVersion() after publishing v2 = %q, %v; want v2", v, err)
	}
	again, err := p.Load(ctx, "v1")
	if err != nil {
		t.Fatalf("Load(v1) after v2: %v", err)
	}
	if got := again.Rules(); len(got) != 1 || got[0].ID != "short" {
		t.Errorf("Load(v1) after v2 has rules %v, want v1's [short]", got)
	}
	if again != v1 {
		t.Errorf("Load(v1) parsed the version again; want the cached rule set")
	}
	v2, err := p.Load(ctx, "v2")
	if err != nil {
		t.Fatalf("Load(v2): %v", err)
	}
	if got := v2.Rules(); len(got) != 2 || got[0].ID != "long" {
		t.Errorf("Load(v2) has rules %v, want [long json]", got)
	}
	if src.gets != 2 {
		t.Errorf("GetRuleSet called %d times, want 2 (one per version)", src.gets)
	}

	if _, err := p.Load(ctx, "v9"); !errors.Is(err, ErrUnknownVersion) {
		t.Errorf("Load(v9) error = %v, want ErrUnknownVersion", err)
	}
	if _, err := p.Load(ctx, SeedVersion); !errors.Is(err, ErrUnknownVersion) {
		t.Errorf("Load(%q) error = %v, want ErrUnknownVersion: seed and published versions are separate", SeedVersion, err)
	}
}

func TestPublishedProviderRefusesCorruptRows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := &fakeSource{}
	p := NewPublishedProvider(src)

	v1Hash, err := Hash([]byte(rulesV1))
	if err != nil {
		t.Fatal(err)
	}
	mismatch := src.publishWithHash(rulesV2, v1Hash)
	if _, err := p.Load(ctx, mismatch); !errors.Is(err, ErrCorruptRuleSet) {
		t.Errorf("Load of a body that does not match its hash: error = %v, want ErrCorruptRuleSet", err)
	}
	unparsable := src.publishWithHash(`{"name": "r"}`, v1Hash)
	if _, err := p.Load(ctx, unparsable); !errors.Is(err, ErrCorruptRuleSet) {
		t.Errorf("Load of an unparsable body: error = %v, want ErrCorruptRuleSet", err)
	}
	// Failures are not cached: a repaired row would load.
	if src.gets != 2 {
		t.Fatalf("gets = %d, want 2", src.gets)
	}
	if _, err := p.Load(ctx, mismatch); err == nil {
		t.Errorf("second Load of a mismatched row succeeded")
	}
	if src.gets != 3 {
		t.Errorf("gets = %d, want 3: refused versions must not be cached", src.gets)
	}
}

func TestPublishedProviderStoreErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := &fakeSource{err: store.ErrUnavailable}
	p := NewPublishedProvider(src)
	if _, err := p.CurrentVersion(ctx); !errors.Is(err, store.ErrUnavailable) || errors.Is(err, ErrNoPublishedVersion) {
		t.Errorf("CurrentVersion() error = %v, want store.ErrUnavailable", err)
	}
	_, err := p.Load(ctx, "v1")
	if !errors.Is(err, store.ErrUnavailable) || errors.Is(err, ErrUnknownVersion) {
		t.Errorf("Load(v1) error = %v, want store.ErrUnavailable", err)
	}
}

func TestPublishedProviderConcurrentLoads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := &fakeSource{}
	src.publish(t, rulesV1)
	src.publish(t, rulesV2)
	p := NewPublishedProvider(src)

	var wg sync.WaitGroup
	results := make([]*RuleSet, 16)
	for i := range results {
		wg.Go(func() {
			rs, err := p.Load(ctx, fmt.Sprintf("v%d", i%2+1))
			if err != nil {
				t.Errorf("Load: %v", err)
			}
			results[i] = rs
		})
	}
	wg.Wait()
	for i, rs := range results {
		if rs != results[i%2] {
			t.Errorf("load %d returned a different *RuleSet than load %d of the same version", i, i%2)
		}
	}
}
