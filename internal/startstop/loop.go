// Package startstop is the start/stop base every background service uses:
// Start launches one goroutine at most once, Stop cancels it with a cause and
// waits for it, and both are safe to call concurrently and repeatedly.
//
//	type Janitor struct{ loop startstop.Loop }
//	func (j *Janitor) Start(ctx context.Context) error { return j.loop.Start(ctx, j.run) }
//	func (j *Janitor) Stop()                          { j.loop.Stop() }
package startstop

import (
	"context"
	"errors"
	"sync"
)

// ErrStopped is the cancellation cause Stop gives the loop's context.
var ErrStopped = errors.New("service stopped")

// Loop runs one background function.
type Loop struct {
	mu      sync.Mutex
	running bool
	cancel  context.CancelCauseFunc
	done    chan struct{}
}

// Start runs fn in a new goroutine with a context derived from ctx. It does
// nothing if the loop is already running. The goroutine's context is
// cancelled by Stop (cause ErrStopped) or when ctx is.
func (l *Loop) Start(ctx context.Context, fn func(ctx context.Context)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.running {
		return nil
	}
	runCtx, cancel := context.WithCancelCause(ctx)
	l.running, l.cancel, l.done = true, cancel, make(chan struct{})
	done := l.done
	go func() {
		defer close(done)
		fn(runCtx)
	}()
	return nil
}

// Stop cancels the loop and waits for it to return. It is idempotent and
// returns at once if the loop never started.
func (l *Loop) Stop() {
	l.mu.Lock()
	if !l.running {
		l.mu.Unlock()
		return
	}
	cancel, done := l.cancel, l.done
	l.running = false
	l.mu.Unlock()
	cancel(ErrStopped)
	<-done
}

// Running reports whether the loop has been started and not stopped.
func (l *Loop) Running() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.running
}
