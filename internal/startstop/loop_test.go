package startstop

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
)

func TestLoopRunsOnceAndStopsWithCause(t *testing.T) {
	var l Loop
	var runs atomic.Int32
	causes := make(chan error, 2)
	fn := func(ctx context.Context) {
		runs.Add(1)
		<-ctx.Done()
		causes <- context.Cause(ctx)
	}
	if err := l.Start(context.Background(), fn); err != nil {
		t.Fatal(err)
	}
	if err := l.Start(context.Background(), fn); err != nil {
		t.Fatal(err)
	}
	l.Stop()
	l.Stop()
	if got := runs.Load(); got != 1 {
		t.Fatalf("runs = %d, want 1", got)
	}
	if cause := <-causes; !errors.Is(cause, ErrStopped) {
		t.Fatalf("cause = %v, want ErrStopped", cause)
	}
	if l.Running() {
		t.Fatal("Running after Stop")
	}
}

func TestLoopStartRefusesCancelledContext(t *testing.T) {
	var l Loop
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := l.Start(ctx, func(context.Context) { t.Error("ran") }); err == nil {
		t.Fatal("Start with a cancelled context: want error")
	}
}

// Concurrent starts and stops must neither race nor leak a goroutine.
func TestLoopConcurrentStartStop(t *testing.T) {
	var l Loop
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			_ = l.Start(context.Background(), func(ctx context.Context) { <-ctx.Done() })
		}()
		go func() {
			defer wg.Done()
			l.Stop()
		}()
	}
	wg.Wait()
	l.Stop()
	if l.Running() {
		t.Fatal("Running after final Stop")
	}
}
