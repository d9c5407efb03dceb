package queue

import (
	"time"

	"github.com/docket-dev/docket/dockettype"
)

// testSignal lets a test wait on something a component did instead of on
// time (River's rivershared/testsignal). It does nothing until a test calls
// init; production never does.
type testSignal[T any] struct{ ch chan T }

// testSignalBuffer bounds what a test may leave unread. A component never
// blocks on a signal: a full buffer is a test bug and panics.
const testSignalBuffer = 10000

func (s *testSignal[T]) init() { s.ch = make(chan T, testSignalBuffer) }

func (s *testSignal[T]) signal(v T) {
	if s == nil || s.ch == nil {
		return
	}
	select {
	case s.ch <- v:
	default:
		panic("queue: test signal buffer is full")
	}
}

// testSignals are every signal the service's components give. The Service
// owns one set and hands each component the few it signals on.
type testSignals struct {
	recovery, heartbeat, deadline, cleaner, workers, schedules, vacuum, bulk schedulerSignals

	idle       testSignal[dockettype.Pool] // a pool's claim loop went idle; its poll timer is armed
	retrying   testSignal[dockettype.Pool] // a completer is waiting to retry a failed write; its timer is armed
	flushing   testSignal[time.Duration]   // a stopping completer is waiting D to retry what the store refused; its timer is armed
	outcome    testSignal[outcome]         // a completer is done with an outcome
	holding    testSignal[int]             // a completer's loop waits for outcomes or a write's end, holding N unwritten
	workerDone testSignal[string]          // a worker returned and handed over its outcome (task ID)
	grace      testSignal[shutdownTimer]   // a pool's Stop armed its grace timer
	abandon    testSignal[shutdownTimer]   // a pool's Stop armed its abandon timer
	waiting    testSignal[string]          // a long poll subscribed and is waiting (task ID)
}

// shutdownTimer is a timer a pool's Stop armed.
type shutdownTimer struct {
	Pool dockettype.Pool
	D    time.Duration
}

// schedulerSignals are what one scheduler signals.
type schedulerSignals struct {
	ticked testSignal[struct{}]      // a tick ended; the next tick's timer is armed
	paused testSignal[time.Duration] // a pause between batches began; its timer is armed
}
