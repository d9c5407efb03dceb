package node

import (
	"time"

	"github.com/jonboulle/clockwork"
)

// newClock is the node's clock: the real one, shifted by offset when a
// fault test asks for a node whose clock is wrong (Options.ClockOffset).
func newClock(offset time.Duration) clockwork.Clock {
	real := clockwork.NewRealClock()
	if offset == 0 {
		return real
	}
	return offsetClock{Clock: real, offset: offset}
}

// offsetClock reads the time offset from the real clock. Durations (timers,
// tickers, sleeps) are unaffected: only the instants the node writes and
// compares — lease expiries, deadlines, run_after, event times — move.
type offsetClock struct {
	clockwork.Clock
	offset time.Duration
}

func (c offsetClock) Now() time.Time                  { return c.Clock.Now().Add(c.offset) }
func (c offsetClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }
func (c offsetClock) Until(t time.Time) time.Duration { return t.Sub(c.Now()) }
