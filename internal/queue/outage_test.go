package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
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
	t.Parallel()
	h := newHarness(t, func(h *harness, c *Config) { c.DefaultMaxAttempts = 2 })
	h.rt.register("test.panic", dockettype.PoolOnline, func(ctx context.Context, inv *Invocation) (json.RawMessage, error) {
		panic("boom " + logtest.Canary)
	})
	outcomes := h.watchOutcomes()
	h.start()
	task := h.submit(alice, "p", "test.panic", `1`)
	if o := awaitOutcome(t, outcomes, task.ID, outcomeApplied); o.Kind != store.FinishRetry {
		t.Fatalf("first attempt's outcome %v, want a retry", o.Kind)
	}
	if n := metric(h.svc.metrics.Retries, "online", "worker_panic"); n != 1 {
		t.Fatalf("retries{worker_panic} = %v, want 1", n)
	}
	h.clock.Advance(2 * h.svc.cfg.RetryBackoffBase) // past the backoff
	h.svc.wake(store.PoolQueue(dockettype.PoolOnline))
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
	t.Parallel()
	var fs *faultstore.Store
	h := newHarness(t, withFaults(&fs))
	gate := h.gate()
	running := make(chan string, 10)
	h.rt.register("test.gated", dockettype.PoolOnline, func(ctx context.Context, inv *Invocation) (json.RawMessage, error) {
		running <- inv.Task.ID
		select {
		case <-gate.C:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return inv.Input, nil
	})
	tk := h.watchTicks()
	h.svc.signals.retrying.init()
	h.start()
	var ids []string
	for i := range 6 {
		ids = append(ids, h.submit(alice, fmt.Sprint("before-", i), "test.gated", fmt.Sprintf(`{"i":%d}`, i)).ID)
	}
	awaitN(t, "four tasks to run", running, 4)

	fs.Set("*", faultstore.Fail(store.ErrUnavailable)) // the database goes away
	during := &SubmitRequest{IdempotencyKey: "during", Workflow: "test.echo", Input: json.RawMessage(`"` + logtest.Canary + `"`)}
	_, err := h.svc.Submit(context.Background(), alice, during)
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
	await(t, "the completer to wait before retrying a failed write", h.svc.signals.retrying.ch)
	if metric(h.svc.metrics.StoreErrors, "finish") == 0 {
		t.Fatal("failed finishes are not visible in the counters")
	}

	// The database returns. The completer's retry timer fires (its delay is
	// at most 5 s; the leases, renewed until now, last 30 s); the pool, whose
	// claims failed, is woken; every task finishes.
	fs.Clear()
	h.clock.Advance(5 * time.Second)
	h.svc.wakeAll()
	for _, id := range ids {
		h.waitTerminal(alice, id, dockettype.StateSucceeded)
		assertHistoryValid(t, h, alice, id)
	}
	if n := metric(h.svc.metrics.LeasesRecovered, "requeued"); n != 0 {
		t.Fatalf("%v leases were recovered: a lease lapsed while its outcome waited for the database", n)
	}
	// The refused submission left nothing behind: the same request under
	// its key now makes a new task (no binding to replay).
	res, err := h.svc.Submit(context.Background(), alice, during)
	if err != nil || res.Replayed {
		t.Fatalf("resubmitting the refused request: %+v %v, want a new task", res, err)
	}
}

// eightRunning starts a node on a fault-injecting store whose completer
// holds 4 outcomes (FinishBatch 1) and 8 workers, and returns once 8 gated
// tasks run on it: more outcomes, when the gate opens, than the completer
// holds.
func eightRunning(t *testing.T) (*harness, *faultstore.Store, *gate, []string) {
	t.Helper()
	var fs *faultstore.Store
	h := newHarness(t, withFaults(&fs), func(h *harness, c *Config) {
		c.FinishBatch = 1
		c.Online.Workers = 8
	})
	g := h.gate()
	running := make(chan string, 8)
	h.rt.register("test.gated", dockettype.PoolOnline, func(ctx context.Context, inv *Invocation) (json.RawMessage, error) {
		running <- inv.Task.ID
		<-g.C
		return inv.Input, nil
	})
	h.start()
	var ids []string
	for i := range 8 {
		ids = append(ids, h.submit(alice, fmt.Sprint("k", i), "test.gated", `1`).ID)
	}
	awaitN(t, "8 tasks to run", running, 8)
	return h, fs, g, ids
}

// TestExecutionServiceStopDuringOutage: with the database down and more
// finished attempts than the completer can hold, Stop still returns; the
// outcomes it could not write are lost only as writes — their leases lapse
// and another node runs those tasks again.
func TestExecutionServiceStopDuringOutage(t *testing.T) {
	t.Parallel()
	h, fs, gate, ids := eightRunning(t)
	fs.Set("*", faultstore.Fail(store.ErrUnavailable))
	gate.open() // 8 outcomes, more than the completer holds, none can be written
	h.stop()    // fails the test if Stop hangs
	t.Logf("finish failures %d, finish calls %d, outcomes dropped %v", fs.Failures("finish"), fs.Calls("finish"),
		metric(h.svc.metrics.OutcomesDropped, "online", "stopping"))
	if n := h.svc.leases.len(); n != 0 {
		t.Fatalf("%d leases still registered after Stop", n)
	}
	fs.Clear()

	// Another node recovers and finishes every task.
	h2 := h.node(h.store, nil)
	tk := h2.watchTicks()
	h2.start()
	await(t, "recovery", tk.recovery)
	h.clock.Advance(h2.svc.cfg.LeaseTTL + h2.svc.cfg.RecoveryInterval)
	await(t, "recovery", tk.recovery)
	for _, id := range ids {
		h2.waitTerminal(alice, id, dockettype.StateSucceeded)
		assertHistoryValid(t, h2, alice, id)
	}
}

// TestStopRetriesRefusedOutcomes: the database refuses the first writes of
// a stop for a passing reason (at PostgreSQL's connection limit, say):
// Stop retries them with backoff instead of giving them up, so every
// outcome finished inside the grace is written and no lease lapses.
func TestStopRetriesRefusedOutcomes(t *testing.T) {
	t.Parallel()
	h, fs, gate, ids := eightRunning(t)
	refusals := fs.Calls("finish") + 5
	fs.Set("finish", func(_ context.Context, call int64) error {
		if call <= refusals {
			return store.ErrUnavailable
		}
		return nil
	})
	h.svc.Drain()
	gate.open()
	h.stop()
	if n := fs.Failures("finish"); n != 5 {
		t.Fatalf("%d finish calls refused, want 5", n)
	}
	if n := metric(h.svc.metrics.OutcomesDropped, "online", "stopping"); n != 0 {
		t.Fatalf("%v outcomes dropped at shutdown, want every one written once the database took them", n)
	}
	fs.Clear()
	h2 := h.node(h.store, nil)
	h2.start()
	for _, id := range ids {
		h2.waitTerminal(alice, id, dockettype.StateSucceeded)
		assertHistoryValid(t, h2, alice, id)
	}
}

// A database refusal that is not an outage (a constraint, a bad value: a
// bug) is internal, not store_unavailable: it is counted, and logged with
// its database code and never its text, so that alerts on outages stay
// true.
func TestDatabaseRefusalIsInternalNotAnOutage(t *testing.T) {
	var fs *faultstore.Store
	h := newHarness(t, withFaults(&fs))
	h.start()
	secret := "duplicate key value violates unique constraint " + logtest.Canary
	fs.Set("admit", faultstore.Fail(&store.DatabaseError{Op: "admit", Backend: store.BackendPostgres, Code: "23505", Err: errors.New(secret)}))
	_, err := h.svc.Submit(context.Background(), alice, &SubmitRequest{IdempotencyKey: "k", Workflow: "test.echo"})
	var de *dockettype.Error
	if !errors.As(err, &de) || de.Code != dockettype.CodeInternal {
		t.Fatalf("submit refused by the database: %v, want internal", err)
	}
	if strings.Contains(de.Message, logtest.Canary) {
		t.Errorf("the database's text reached the client: %q", de.Message)
	}
	if metric(h.svc.metrics.StoreErrors, "admit") != 1 {
		t.Errorf("store errors for admit = %v, want 1", metric(h.svc.metrics.StoreErrors, "admit"))
	}
	logs := h.logs.String()
	if !strings.Contains(logs, `"db_code":"23505"`) || !strings.Contains(logs, `"code":"internal"`) {
		t.Errorf("the refusal is not logged with its code and database code:\n%s", logs)
	}
}
