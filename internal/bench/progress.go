package bench

import (
	"fmt"
	"io"
	"time"

	"github.com/jonboulle/clockwork"
)

// progress prints a line at most once per period; a nil writer prints
// nothing.
type progress struct {
	w      io.Writer
	clock  clockwork.Clock
	every  time.Duration
	start  time.Time
	last   time.Time
	lastN  int
	phase  string
	period time.Duration // of the last line
}

func newProgress(w io.Writer, clock clockwork.Clock, every time.Duration) *progress {
	now := clock.Now()
	return &progress{w: w, clock: clock, every: every, start: now, last: now}
}

// reset starts a new phase: elapsed time and rates count from now.
func (p *progress) reset(phase string, n int) {
	now := p.clock.Now()
	p.phase, p.start, p.last, p.lastN = phase, now, now, n
}

// maybe prints line() when a period has passed since the last line.
func (p *progress) maybe(line func() string) {
	if p == nil || p.w == nil || p.clock.Since(p.last) < p.every {
		return
	}
	now := p.clock.Now()
	p.period, p.last = now.Sub(p.last), now
	fmt.Fprintf(p.w, "%-10s %6.1fs  %s\n", p.phase, now.Sub(p.start).Seconds(), line())
}

// rate is the per-second rate of a counter since the previous call (the
// last printed period).
func (p *progress) rate(n int) float64 {
	d := p.period.Seconds()
	r := 0.0
	if d > 0 {
		r = float64(n-p.lastN) / d
	}
	p.lastN = n
	return r
}
