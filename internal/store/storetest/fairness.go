package storetest

import (
	"testing"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// fairClock hands out claim times one millisecond apart.
type fairClock struct{ now time.Time }

func (c *fairClock) next() time.Time {
	c.now = c.now.Add(ms)
	return c.now
}

// claimRounds claims rounds times with limit from the online pool and
// counts the claimed tasks per tenant.
func claimRounds(t *testing.T, s store.Store, clock *fairClock, rounds, limit int) map[string]int {
	t.Helper()
	n := map[string]int{}
	for range rounds {
		got := claim(t, s, clock.next(), dockettype.PoolOnline, limit)
		if len(got) != limit {
			t.Fatalf("claim with a backlog returned %d tasks, want %d", len(got), limit)
		}
		for _, c := range got {
			n[c.Task.Tenant]++
		}
	}
	return n
}

func wantBetween(t *testing.T, what string, got, lo, hi int) {
	t.Helper()
	if got < lo || got > hi {
		t.Errorf("%s = %d, want %d..%d", what, got, lo, hi)
	}
}

func (su suite) testFairness(t *testing.T) {
	su.run(t, "NewTenantNotStarved", func(t *testing.T, s store.Store) {
		admitN(t, s, at(0), tenantA, 200, nil)
		admitN(t, s, at(ms), tenantB, 5, nil)
		clock := &fairClock{now: at(time.Second)}
		got := claimRounds(t, s, clock, 10, 1)
		if got[tenantB] != 5 {
			t.Errorf("over 10 claims after A queued 200 and B queued 5, B got %d, want all 5 (claims: %v)", got[tenantB], got)
		}
	})

	su.run(t, "EqualWeights", func(t *testing.T, s store.Store) {
		admitN(t, s, at(0), tenantA, 30, nil)
		admitN(t, s, at(ms), tenantB, 30, nil)
		got := claimRounds(t, s, &fairClock{now: at(time.Second)}, 10, 4)
		wantBetween(t, "tasks of A over 40 claims", got[tenantA], 18, 22)
		wantBetween(t, "tasks of B over 40 claims", got[tenantB], 18, 22)
	})

	su.run(t, "Weighted", func(t *testing.T, s store.Store) {
		setLimits(t, s, tenantA, 0, 3)
		setLimits(t, s, tenantB, 0, 1)
		// B queues first so that age alone would favour B.
		admitN(t, s, at(0), tenantB, 100, nil)
		admitN(t, s, at(ms), tenantA, 100, nil)
		got := claimRounds(t, s, &fairClock{now: at(time.Second)}, 20, 4)
		wantBetween(t, "tasks of A (weight 3) over 80 claims", got[tenantA], 56, 64)
		wantBetween(t, "tasks of B (weight 1) over 80 claims", got[tenantB], 16, 24)
	})

	// A tenant that was idle must not be paid back for the time it had no
	// work: stride scheduling moves a returning tenant's pass up to the
	// current one, so it shares evenly instead of bursting.
	su.run(t, "NoBurstAfterIdle", func(t *testing.T, s store.Store) {
		admitN(t, s, at(0), tenantA, 200, nil)
		admitN(t, s, at(0), tenantB, 10, nil)
		clock := &fairClock{now: at(time.Second)}
		// Both are served until B drains after about 20 claims; then A
		// claims alone for a hundred more.
		claimRounds(t, s, clock, 120, 1)

		admitN(t, s, clock.next(), tenantB, 20, nil)
		got := claimRounds(t, s, clock, 20, 1)
		wantBetween(t, "tasks of B over the 20 claims after it returned", got[tenantB], 8, 12)
	})
}
