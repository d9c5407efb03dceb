package engine

import (
	"slices"
	"testing"

	"github.com/docket-dev/docket/internal/store"
)

// Whatever the rate and burst, the allowances of the ticks a one-second
// window meets, with the lookback ticks before them, sum to at most
// rate+burst; and a limit hit steadily starts rate per second when burst
// is at least rate·(1+lookback)/k, never less than 90 % of it otherwise.
func TestAllowanceBoundsEveryWindow(t *testing.T) {
	for _, tc := range []struct{ rate, burst int }{
		{1, 0}, {3, 0}, {7, 1}, {10, 2}, {49, 0}, {50, 0}, {100, 10}, {333, 0}, {500, 50}, {500, 0}, {1000, 0}, {MaxRate, 0},
	} {
		tms := TickMS(tc.rate)
		k := 1000 / tms
		start := int64(1_764_633_600_000) / tms // some tick in 2025
		var total int
		for i := start; i < start+10*k; i++ {
			window := 0
			for j := i - lookback; j <= i+k; j++ { // k+1 ticks met and the lookback before
				window += Allowance(tc.rate, tc.burst, j)
			}
			if window > tc.rate+tc.burst {
				t.Fatalf("rate %d burst %d: ticks %d..%d allow %d starts, over %d", tc.rate, tc.burst, i-lookback, i+k, window, tc.rate+tc.burst)
			}
			total += Allowance(tc.rate, tc.burst, i)
		}
		perSec := float64(total) / 10
		wantExact := tc.burst*int(k) >= tc.rate*(1+lookback)
		if (wantExact && perSec != float64(tc.rate)) || perSec < 0.9*float64(tc.rate) {
			t.Errorf("rate %d burst %d: %.2f starts per second held steadily", tc.rate, tc.burst, perSec)
		}
	}
}

// A hand-off starts, of the tasks a release promoted, only those ready in
// the finishing pool's queue and under no rule, highest priority then
// oldest first, up to the room the finish brought.
func TestChooseHandOff(t *testing.T) {
	online, offline := store.Queue("online"), store.Queue("offline")
	cand := func(id string, q store.Queue, prio int, ready, ruled bool) HandOffCandidate {
		return HandOffCandidate{Moved: Moved{TaskID: id, Queue: q, Ready: ready}, Priority: prio, Ruled: ruled}
	}
	cands := []HandOffCandidate{
		cand("b", online, 0, true, false),
		cand("a", online, 0, true, false),
		cand("c", online, 5, true, false),
		cand("d", online, 9, false, false), // delayed
		cand("e", online, 9, true, true),   // under a pause or rate limit
		cand("f", offline, 9, true, false), // another queue
	}
	ids := func(idx []int) []string {
		var out []string
		for _, i := range idx {
			out = append(out, cands[i].TaskID)
		}
		return out
	}
	for _, tc := range []struct {
		limit int
		want  []string
	}{{0, nil}, {2, []string{"c", "a"}}, {10, []string{"c", "a", "b"}}} {
		if got := ids(ChooseHandOff(cands, &store.HandOff{Queue: online, Limit: tc.limit})); !slices.Equal(got, tc.want) {
			t.Errorf("limit %d: started %v, want %v", tc.limit, got, tc.want)
		}
	}
}
