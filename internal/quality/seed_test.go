package quality

import (
	"context"
	"errors"
	"testing"
)

// seedHash pins the frozen seed. If this test fails, the seed rules
// changed: tasks pinned to SeedVersion would now be judged differently.
// Bump SeedVersion together with any deliberate change, then update this.
const seedHash = "sha256:72e3a282f9bd9eb2225fcbbffaba130a986fe393147ca440d924bb33b369df7c"

func TestSeedIsFrozen(t *testing.T) {
	t.Parallel()
	got, err := Hash(seedRules)
	if err != nil {
		t.Fatalf("seed rules do not parse: %v", err)
	}
	if got != seedHash {
		t.Errorf("seed hash = %s, want %s", got, seedHash)
	}
	if Seed().Hash() != seedHash {
		t.Errorf("Seed().Hash() = %s, want %s", Seed().Hash(), seedHash)
	}
}

func TestSeedRules(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		text       string
		wantFailed []string
	}{
		{"plain text passes", "Thanks for your order, it ships tomorrow.", nil},
		{"empty", "", []string{"length"}},
		{"aws key", "use AKIAIOSFODNN7EXAMPLE to log in", []string{"no-api-keys"}},
		{"openai style key", "key: sk-abcdefghijklmnopqrstuvwxyz123456", []string{"no-api-keys"}},
		{"password", "Password = hunter2", []string{"no-passwords"}},
		{"private key", "-----BEGIN RSA PRIVATE KEY-----\nMIIE...", []string{"no-private-keys"}},
		{"placeholder", "Lorem ipsum dolor sit amet", []string{"no-placeholders"}},
		{"the word password alone is fine", "Reset your password from the settings page.", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rep := Evaluate(Seed(), Input{Text: tt.text})
			var failed []string
			for _, it := range rep.Items {
				if !it.Passed {
					failed = append(failed, it.RuleID)
				}
			}
			if len(failed) != len(tt.wantFailed) || (len(failed) > 0 && failed[0] != tt.wantFailed[0]) {
				t.Errorf("failed rules = %v, want %v", failed, tt.wantFailed)
			}
		})
	}
}

func TestSeedProvider(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := NewSeedProvider()
	v, err := p.CurrentVersion(ctx)
	if err != nil || v != SeedVersion {
		t.Fatalf("CurrentVersion() = %q, %v; want %q", v, err, SeedVersion)
	}
	rs, err := p.Load(ctx, SeedVersion)
	if err != nil {
		t.Fatalf("Load(%q): %v", SeedVersion, err)
	}
	if rs.Hash() != seedHash {
		t.Errorf("Load(%q).Hash() = %s, want %s", SeedVersion, rs.Hash(), seedHash)
	}
	for _, v := range []string{"v1", "", "seed-2"} {
		if _, err := p.Load(ctx, v); !errors.Is(err, ErrUnknownVersion) {
			t.Errorf("Load(%q) error = %v, want ErrUnknownVersion", v, err)
		}
	}
}
