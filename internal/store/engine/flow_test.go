package engine

import "testing"

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
