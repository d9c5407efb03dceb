package queue

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// TestExecutionServiceScheduledTask: a task submitted with run_at is not
// started before it (even when its pool is woken), starts once the clock
// passes it, and its deadline counts from it.
func TestExecutionServiceScheduledTask(t *testing.T) {
	h := newHarness(t)
	started := make(chan time.Time, 1)
	h.rt.register("test.when", dockettype.PoolOnline, func(_ context.Context, inv *Invocation) (json.RawMessage, error) {
		started <- h.clock.Now()
		return nil, nil
	})
	h.start()
	runAt := h.clock.Now().Add(time.Hour)
	res, err := h.svc.Submit(context.Background(), alice, &SubmitRequest{
		IdempotencyKey: "later", Workflow: "test.when", TimeoutMS: 60_000, RunAt: runAt,
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Task.DeadlineAt; !got.Equal(runAt.Add(time.Minute)) {
		t.Fatalf("deadline %s, want run_at + timeout %s", got, runAt.Add(time.Minute))
	}
	// The submission woke the pool; its claim found nothing ready. A task
	// without run_at submitted now runs, and the scheduled one still waits.
	h.waitTerminal(alice, h.submit(alice, "now", "test.echo", `1`).ID, dockettype.StateSucceeded)
	select {
	case at := <-started:
		t.Fatalf("the scheduled task started at %s, before its run_at %s", at, runAt)
	default:
	}
	if got := h.get(alice, res.Task.ID); got.State != dockettype.StateQueued {
		t.Fatalf("scheduled task is %s before its run_at", got.State)
	}

	// The next claim after run_at (here a wake-up; in production also the
	// pool's poll) promotes and starts it.
	h.clock.Advance(time.Hour)
	h.svc.wake(store.PoolQueue(dockettype.PoolOnline))
	select {
	case at := <-started:
		if at.Before(runAt) {
			t.Fatalf("started at %s, before run_at %s", at, runAt)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the scheduled task did not start after its run_at")
	}
	h.waitTerminal(alice, res.Task.ID, dockettype.StateSucceeded)
}
