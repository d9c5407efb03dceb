package sqlite

import (
	"context"
	"sync"
	"testing"
	"time"
)

// waitQueued waits until the gate has fg and bg waiters queued.
func waitQueued(t *testing.T, g *writeGate, fg, bg int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		g.mu.Lock()
		ok := len(g.fg) == fg && len(g.bg) == bg
		g.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("gate never had %d foreground and %d background waiters", fg, bg)
		}
		<-time.After(time.Millisecond)
	}
}

func TestWriteGateForegroundFirstButBackgroundNeverStarves(t *testing.T) {
	g := newWriteGate()
	if err := g.acquire(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var order []string
	var wg sync.WaitGroup
	enter := func(name string, background bool) {
		defer wg.Done()
		if err := g.acquire(context.Background(), background); err != nil {
			t.Error(err)
			return
		}
		mu.Lock()
		order = append(order, name)
		mu.Unlock()
		g.release()
	}
	wg.Add(1)
	go enter("bg", true)
	waitQueued(t, g, 0, 1)
	for i := 0; i < bypassAfter+2; i++ {
		wg.Add(1)
		go enter("fg", false)
		waitQueued(t, g, i+1, 1)
	}
	g.release()
	wg.Wait()
	// The background writer queued first, yet yields to exactly
	// bypassAfter foreground writers, then goes.
	for i, name := range order {
		want := "fg"
		if i == bypassAfter {
			want = "bg"
		}
		if name != want {
			t.Fatalf("order %v: position %d is %s, want %s", order, i, name, want)
		}
	}
}

func TestWriteGateCancelledWaiterDoesNotHoldTheGate(t *testing.T) {
	g := newWriteGate()
	if err := g.acquire(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.acquire(ctx, true) }()
	waitQueued(t, g, 0, 1)
	cancel()
	if err := <-done; err == nil {
		t.Fatal("acquire with a cancelled context succeeded")
	}
	g.release()
	// The gate is free again.
	ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	if err := g.acquire(ctx2, false); err != nil {
		t.Fatalf("gate not released after a cancelled waiter: %v", err)
	}
}
