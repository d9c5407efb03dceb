package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/docket-dev/docket/dockettype"
)

// TestExecutionServiceRetention: the cleaner, a fourth scheduler, deletes
// tasks that finished more than Retention ago, in bounded batches, with
// their history and idempotency binding (the key then admits a new task);
// younger and unfinished tasks stay.
func TestExecutionServiceRetention(t *testing.T) {
	h := newHarness(t, func(h *harness, c *Config) {
		c.Retention = time.Hour
		c.CleanerInterval = time.Minute
		c.ScanBatch = 2 // five old tasks: three batches in one tick
	})
	hold := h.gate()
	h.rt.register("test.hold", dockettype.PoolOnline, func(ctx context.Context, inv *Invocation) (json.RawMessage, error) {
		select {
		case <-hold.C:
		case <-ctx.Done():
		}
		return nil, nil
	})
	tk := h.watchTicks()
	h.svc.signals.cleaner.paused.init()
	h.start()
	await(t, "cleaner", tk.cleaner) // the first tick, on an empty database
	ctx := context.Background()

	var old []*dockettype.Task
	for i := range 5 {
		old = append(old, h.submit(alice, fmt.Sprint("old-", i), "test.echo", `1`))
	}
	for _, task := range old {
		h.waitTerminal(alice, task.ID, dockettype.StateSucceeded)
	}
	res, err := h.svc.Submit(ctx, alice, &SubmitRequest{IdempotencyKey: "running", Workflow: "test.hold", TimeoutMS: (3 * time.Hour).Milliseconds()})
	if err != nil {
		t.Fatal(err)
	}
	running := res.Task
	h.clock.Advance(59 * time.Minute)
	await(t, "cleaner", tk.cleaner) // nothing is an hour old yet
	young := h.submit(alice, "young", "test.echo", `2`)
	h.waitTerminal(alice, young.ID, dockettype.StateSucceeded)
	deleted := testutil.ToFloat64(h.svc.metrics.TasksDeleted)
	if deleted != 0 {
		t.Fatalf("the cleaner deleted %v tasks before any was an hour old", deleted)
	}

	// An hour and a bit after the first tasks finished: one cleaner tick,
	// three batches (2, 2, 1) with a pause between two.
	h.clock.Advance(2 * time.Minute)
	for range 2 {
		pause := await(t, "cleaner pause", h.svc.signals.cleaner.paused.ch)
		h.clock.Advance(pause)
	}
	await(t, "cleaner", tk.cleaner)
	if n := testutil.ToFloat64(h.svc.metrics.TasksDeleted) - deleted; n != 5 {
		t.Fatalf("cleaner deleted %v tasks, want the 5 finished more than an hour ago", n)
	}
	for _, task := range old {
		if _, err := h.svc.Get(ctx, alice, task.ID); errorCode(t, err) != dockettype.CodeNotFound {
			t.Fatalf("deleted task %s: %v, want not_found", task.ID, err)
		}
		if _, err := h.svc.Events(ctx, alice, task.ID); errorCode(t, err) != dockettype.CodeNotFound {
			t.Fatalf("events of deleted task %s: %v, want not_found", task.ID, err)
		}
	}
	if got := h.get(alice, young.ID); got.State != dockettype.StateSucceeded {
		t.Fatalf("young task: %s", got.State)
	}
	if got := h.get(alice, running.ID); got.State != dockettype.StateRunning {
		t.Fatalf("running task: %s", got.State)
	}
	// A deleted task's key admits a new task.
	res, err = h.svc.Submit(ctx, alice, &SubmitRequest{IdempotencyKey: "old-0", Workflow: "test.echo"})
	if err != nil || res.Replayed || res.Task.ID == old[0].ID {
		t.Fatalf("submit with a deleted task's key: %+v, %v; want a new task", res, err)
	}
	hold.open()
}
