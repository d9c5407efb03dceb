package bench

import (
	"fmt"
	"io"
	"time"
)

// progress prints a line at most once per period; a nil writer prints
// nothing.
type progress struct {
	w      io.Writer
	every  time.Duration
	start  time.Time
	last   time.Time
	lastN  int
	phase  string
	period time.Duration // of the last line
}

func newProgress(w io.Writer, every time.Duration) *progress {
	now := time.Now()
	return &progress{w: w, every: every, start: now, last: now}
}

// reset starts a new phase: elapsed time and rates count from now.
func (p *progress) reset(phase string, n int) {
	p.phase, p.start, p.last, p.lastN = phase, time.Now(), time.Now(), n
}

// maybe prints line() when a period has passed since the last line.
func (p *progress) maybe(line func() string) {
	if p == nil || p.w == nil || time.Since(p.last) < p.every {
		return
	}
	p.period = time.Since(p.last)
	p.last = time.Now()
	fmt.Fprintf(p.w, "%-10s %6.1fs  %s\n", p.phase, time.Since(p.start).Seconds(), line())
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
