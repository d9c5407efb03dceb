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
		// The clock jumps by an hour: leases that outlast it keep the
		// running task's lease out of play, whichever of the heartbeat
		// and recovery ticks the jump fires first.
		c.LeaseTTL = 24 * time.Hour
		c.HeartbeatInterval = 8 * time.Hour
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

// A cleaner tick is bounded by its interval, not by a number of batches:
// the finished tasks grow with throughput, and a fixed batch count per tick
// would let them outgrow the cleaner.
func TestCleanerTickRunsForItsInterval(t *testing.T) {
	h := newHarness(t, func(h *harness, c *Config) {
		c.Retention = time.Hour
		c.CleanerInterval = time.Minute
		c.ScanBatch = 1
		c.ScanBatches = 2 // the recovery and deadline bound; the cleaner ignores it
		c.ScanPause = 20 * time.Second
	})
	tk := h.watchTicks()
	h.svc.signals.cleaner.paused.init()
	h.start()
	await(t, "cleaner", tk.cleaner) // the first tick, on an empty database

	var old []*dockettype.Task
	for i := range 5 {
		old = append(old, h.submit(alice, fmt.Sprint("old-", i), "test.echo", `1`))
	}
	for _, task := range old {
		h.waitTerminal(alice, task.ID, dockettype.StateSucceeded)
	}
	// Past the retention at the next tick: batches of one at 0, 20, 40 and
	// 60 s; the one that reaches the interval is the tick's last.
	h.clock.Advance(time.Hour + time.Minute)
	for range 3 {
		pause := await(t, "cleaner pause", h.svc.signals.cleaner.paused.ch)
		h.clock.Advance(pause)
	}
	// The tick ends without waiting for a fourth pause (had it gone on, it
	// would be waiting for one now, with a task left to delete).
	await(t, "cleaner", tk.cleaner)
	// The next tick is due at once (periods are timed from a tick's start):
	// it deletes the fifth task, then pauses as a full batch does.
	pause := await(t, "cleaner pause", h.svc.signals.cleaner.paused.ch)
	if n := testutil.ToFloat64(h.svc.metrics.TasksDeleted); n != 5 {
		t.Fatalf("%v tasks deleted after the second tick's first batch, want 5", n)
	}
	h.clock.Advance(pause)
	await(t, "cleaner", tk.cleaner)
	for _, task := range old {
		if _, err := h.svc.Get(context.Background(), alice, task.ID); errorCode(t, err) != dockettype.CodeNotFound {
			t.Fatalf("deleted task %s: %v, want not_found", task.ID, err)
		}
	}
}
