package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/logtest"
	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/store/faultstore"
)

// TestExecutionServiceWorkerPanic: a panicking workflow is recovered,
// counted by workflow, logged by code only, retried, and finally fails with
// worker_panic; the node keeps working.
func TestExecutionServiceWorkerPanic(t *testing.T) {
	h := newHarness(t, func(h *harness, c *Config) { c.DefaultMaxAttempts = 2 })
	h.rt.register("test.panic", dockettype.PoolOnline, func(ctx context.Context, inv *Invocation) (json.RawMessage, error) {
		panic("boom " + logtest.Canary)
	})
	h.start()
	task := h.submit(alice, "p", "test.panic", `1`)
	eventually(t, "the first attempt to be retried", func() bool {
		return metric(h.svc.metrics.Retries, "online", "worker_panic") == 1
	})
	h.clock.Advance(2 * h.svc.cfg.RetryBackoffBase) // past the backoff
	h.svc.wake(dockettype.PoolOnline)
	got := h.waitTerminal(alice, task.ID, dockettype.StateFailed)
	if got.Error == nil || got.Error.Code != dockettype.CodeWorkerPanic || got.Attempt != 2 {
		t.Fatalf("after two panics: %+v attempt %d, want failed/worker_panic after 2 attempts", got.Error, got.Attempt)
	}
	if n := metric(h.svc.metrics.WorkerPanics, "test.panic"); n != 2 {
		t.Fatalf("worker_panics_total = %v, want 2", n)
	}
	// The node still runs other work.
	ok := h.submit(alice, "after", "test.echo", `{"ok":true}`)
	h.waitTerminal(alice, ok.ID, dockettype.StateSucceeded)
}

// TestExecutionServiceDatabaseOutage: while every store call fails,
// submissions are refused with store_unavailable and nothing is admitted;
// tasks admitted before the outage stay recoverable; when the database
// returns, work resumes and every task finishes. The counters show the
// outage.
func TestExecutionServiceDatabaseOutage(t *testing.T) {
	var fs *faultstore.Store
	h := newHarness(t, withFaults(&fs))
	gate := h.gate()
	h.rt.register("test.gated", dockettype.PoolOnline, func(ctx context.Context, inv *Invocation) (json.RawMessage, error) {
		select {
		case <-gate.C:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return inv.Input, nil
	})
	tk := h.watchTicks()
	h.start()
	var ids []string
	for i := range 6 {
		ids = append(ids, h.submit(alice, fmt.Sprint("before-", i), "test.gated", fmt.Sprintf(`{"i":%d}`, i)).ID)
	}
	eventually(t, "four tasks to run", func() bool { return h.svc.leases.len() == 4 })

	fs.Set("*", faultstore.Fail(store.ErrUnavailable)) // the database goes away
	_, err := h.svc.Submit(context.Background(), alice, &SubmitRequest{IdempotencyKey: "during", Workflow: "test.echo", Input: json.RawMessage(`"` + logtest.Canary + `"`)})
	var de *dockettype.Error
	if !errors.As(err, &de) || de.Code != dockettype.CodeStoreUnavailable {
		t.Fatalf("submit during outage: %v, want store_unavailable", err)
	}
	for range 2 { // heartbeats fail while the tasks run
		h.clock.Advance(h.svc.cfg.HeartbeatInterval)
		await(t, "heartbeat", tk.heartbeat)
	}
	if metric(h.svc.metrics.StoreErrors, "heartbeat") == 0 || metric(h.svc.metrics.SchedulerErrors, "heartbeat") == 0 {
		t.Fatal("failed heartbeats are not visible in the counters")
	}
	gate.open() // running tasks finish while the database is down
	eventually(t, "failed finishes to be counted", func() bool {
		return metric(h.svc.metrics.StoreErrors, "finish") > 0
	})

	fs.Clear() // the database returns
	eventually(t, "every task admitted before the outage to finish", func() bool {
		h.clock.Advance(time.Second)
		h.svc.wakeAll()
		tasks, err := getTasks(context.Background(), h.store, "acme", ids)
		if err != nil {
			return false
		}
		for _, task := range tasks {
			if task.State != dockettype.StateSucceeded {
				return false
			}
		}
		return true
	})
	for _, id := range ids {
		assertHistoryValid(t, h, alice, id)
	}
	// The refused submission left nothing behind: retrying it now admits
	// a new task (a binding would make it a replay).
	res, err := h.svc.Submit(context.Background(), alice, &SubmitRequest{IdempotencyKey: "during", Workflow: "test.echo", Input: json.RawMessage(`1`)})
	if err != nil || res.Replayed {
		t.Fatalf("retry of the refused submission: %+v, %v; want a new task", res, err)
	}
}

// TestExecutionServiceStopDuringOutage: with the database down and more
// finished attempts than the completer can hold, Stop still returns; the
// outcomes it could not write are lost only as writes — their leases lapse
// and another node runs those tasks again.
func TestExecutionServiceStopDuringOutage(t *testing.T) {
	var fs *faultstore.Store
	h := newHarness(t, withFaults(&fs), func(h *harness, c *Config) {
		c.FinishBatch = 1 // the completer holds 4 outcomes
		c.Online.Workers = 16
	})
	gate := h.gate()
	h.rt.register("test.gated", dockettype.PoolOnline, func(ctx context.Context, inv *Invocation) (json.RawMessage, error) {
		<-gate.C
		return inv.Input, nil
	})
	h.start()
	var ids []string
	for i := range 16 {
		ids = append(ids, h.submit(alice, fmt.Sprint("k", i), "test.gated", `1`).ID)
	}
	eventually(t, "16 tasks to run", func() bool { return h.svc.leases.len() == 16 })
	fs.Set("*", faultstore.Fail(store.ErrUnavailable))
	gate.open() // 16 outcomes, none can be written
	stopped := make(chan struct{})
	go func() {
		h.stop()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(30 * time.Second):
		t.Fatal("Stop hung while the database was down")
	}
	t.Logf("finish failures %d, finish calls %d, leases held %d", fs.Failures("finish"), fs.Calls("finish"), h.svc.leases.len())
	fs.Clear()

	// Another node recovers and finishes every task.
	h2 := &harness{t: t, store: h.store, st: h.store, rt: h.rt, clock: h.clock}
	cfg := h.svc.cfg
	cfg.NodeID = "node-b"
	var err error
	if h2.svc, err = New(h.store, h.rt, cfg); err != nil {
		t.Fatal(err)
	}
	tk := h2.watchTicks()
	h2.start()
	await(t, "recovery", tk.recovery)
	h.clock.Advance(cfg.LeaseTTL + cfg.RecoveryInterval)
	await(t, "recovery", tk.recovery)
	for _, id := range ids {
		h2.waitTerminal(alice, id, dockettype.StateSucceeded)
		assertHistoryValid(t, h2, alice, id)
	}
}
