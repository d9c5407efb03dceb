package queue

import (
	"sync"
	"sync/atomic"
)

// signal is a one-shot broadcast.
type signal struct {
	once sync.Once
	ch   chan struct{}
}

func newSignal() *signal { return &signal{ch: make(chan struct{})} }

func (s *signal) fire()                 { s.once.Do(func() { close(s.ch) }) }
func (s *signal) done() <-chan struct{} { return s.ch }

// drainSignal fires when the service begins to stop (Drain or Stop): long
// polls answer at once and completers stop retrying. Start re-arms it.
type drainSignal struct{ cur atomic.Pointer[signal] }

func newDrainSignal() *drainSignal {
	d := &drainSignal{}
	d.reset()
	return d
}

func (d *drainSignal) reset()                { d.cur.Store(newSignal()) }
func (d *drainSignal) fire()                 { d.cur.Load().fire() }
func (d *drainSignal) done() <-chan struct{} { return d.cur.Load().done() }

// wakeup tells a pool's claim loop that work may be ready. A wake-up sent
// while the loop is busy is kept (buffered 1) for its next idle moment.
type wakeup struct{ ch chan struct{} }

func newWakeup() *wakeup { return &wakeup{ch: make(chan struct{}, 1)} }

func (w *wakeup) wake() {
	select {
	case w.ch <- struct{}{}:
	default:
	}
}

func (w *wakeup) c() <-chan struct{} { return w.ch }
