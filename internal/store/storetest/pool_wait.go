package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/store/engine"
)

// RunBackend runs the checks of a backend's own contract (engine.Backend)
// that the store's operations cannot reach from outside. newBackend returns
// a fresh, migrated backend, which the check closes.
func RunBackend(t *testing.T, newBackend func(t *testing.T) engine.Backend) {
	t.Run("PoolWait", func(t *testing.T) {
		t.Parallel()
		testPoolWait(t, newBackend(t))
	})
	t.Run("PoolWaitLeavesTimeForTheQuery", func(t *testing.T) {
		t.Parallel()
		testPoolWaitLeavesTime(t, newBackend(t))
	})
}

// A call whose connection frees only when most of its time is gone is
// shed as store.ErrBusy before its query starts, rather than started with
// too little time left and cut off mid query (store_unavailable while the
// database is healthy).
func testPoolWaitLeavesTime(t *testing.T, b engine.Backend) {
	defer b.Close()
	f, err := b.Fork("pool-wait-late", store.ForkOptions{MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	held, done := make(chan struct{}), make(chan error, 1)
	const timeout = 2 * time.Second
	began := time.Now()
	go func() {
		done <- f.Read(context.Background(), "list_tasks", func(engine.Querier) error {
			close(held)
			// Free the connection after seven eighths of the other call's
			// time: past its wait share, before its deadline.
			time.Sleep(timeout*7/8 - time.Since(began))
			return nil
		})
	}()
	<-held
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	started := false
	err = f.Read(ctx, "get_task", func(engine.Querier) error {
		started = true
		return nil
	})
	if started || !errors.Is(err, store.ErrBusy) {
		t.Errorf("a read whose connection frees after 7/8 of its time: started %v, error %v; want store.ErrBusy, not started", started, err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// A call that waits for a connection of a saturated pool until its
// deadline is store.ErrBusy, not an outage: 2,500 concurrent reads of a
// large result once answered 577 of them store_unavailable while the
// database was healthy. A caller that goes away while waiting gets its
// cancellation; once the connection is free, the call goes through.
func testPoolWait(t *testing.T, b engine.Backend) {
	defer b.Close()
	f, err := b.Fork("pool-wait", store.ForkOptions{MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ping := func(q engine.Querier) error {
		rows, err := q.Query("SELECT 1 FROM counters LIMIT 1")
		if err == nil {
			rows.Close()
		}
		return err
	}

	held, release, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- f.Read(context.Background(), "list_tasks", func(q engine.Querier) error {
			close(held)
			<-release
			return ping(q)
		})
	}()
	<-held // the fork's one connection is in use

	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if err := f.Read(ctx, "get_task", ping); !errors.Is(err, store.ErrBusy) || errors.Is(err, store.ErrUnavailable) ||
		store.Operation(err) != "get_task" {
		t.Errorf("a read waiting for a connection in use until its deadline = %v, want store.ErrBusy naming get_task", err)
	}
	gone, leave := context.WithCancel(t.Context())
	leave()
	if err := f.Read(gone, "get_task", ping); !errors.Is(err, context.Canceled) || errors.Is(err, store.ErrBusy) {
		t.Errorf("a caller gone while waiting = %v, want its cancellation, not busy", err)
	}

	close(release)
	if err := <-done; err != nil {
		t.Fatalf("the read that held the connection: %v", err)
	}
	if err := f.Read(t.Context(), "get_task", ping); err != nil {
		t.Errorf("once the connection is free: %v", err)
	}
}
