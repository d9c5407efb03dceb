package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/logtest"
	"github.com/docket-dev/docket/internal/metrics"
	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/store/faultstore"
)

// TestCompleterLaggingWriteKeepsLease: a finished attempt whose outcome
// cannot be written for three lease TTLs keeps its lease: heartbeats renew
// it until the write lands, recovery never re-queues the task, and the
// workflow runs once.
func TestCompleterLaggingWriteKeepsLease(t *testing.T) {
	t.Parallel()
	var fs *faultstore.Store
	h := newHarness(t, withFaults(&fs), func(h *harness, c *Config) {
		c.QueryTimeout = time.Hour // the write lags however slow the machine
	})
	writes := h.gate()
	fs.Set("finish", faultstore.BlockUntil(writes.C))
	var runs atomic.Int32
	h.rt.register("test.once", dockettype.PoolOnline, func(ctx context.Context, inv *Invocation) (json.RawMessage, error) {
		runs.Add(1)
		return json.RawMessage(`"done"`), nil
	})
	tk := h.watchTicks()
	workers := h.watchWorkers()
	h.start()
	for _, ch := range []chan struct{}{tk.recovery, tk.heartbeat, tk.deadline} {
		await(t, "initial tick", ch)
	}
	task := h.submit(alice, "k", "test.once", `1`)
	awaitValue(t, "the worker to hand over its outcome", workers, task.ID)

	// The write hangs. Each step moves the clock one heartbeat interval and
	// waits for that heartbeat and for a recovery scan.
	ttl := h.svc.cfg.LeaseTTL
	for elapsed := time.Duration(0); elapsed <= 3*ttl; elapsed += h.svc.cfg.HeartbeatInterval {
		h.clock.Advance(h.svc.cfg.HeartbeatInterval)
		await(t, "heartbeat", tk.heartbeat)
		await(t, "recovery", tk.recovery)
	}
	if n := metric(h.svc.metrics.LeasesRecovered, "requeued"); n != 0 {
		t.Fatalf("recovery re-queued %v tasks whose outcome was waiting to be written", n)
	}
	if got := h.get(alice, task.ID); got.State != dockettype.StateRunning || got.LeaseEpoch != 1 {
		t.Fatalf("while the write lags the task is %s epoch %d, want running under its first lease", got.State, got.LeaseEpoch)
	}
	if n := h.svc.leases.len(); n != 1 {
		t.Fatalf("%d leases registered while the outcome waits, want 1", n)
	}

	writes.open()
	got := h.waitTerminal(alice, task.ID, dockettype.StateSucceeded)
	if string(got.Result) != `"done"` || got.Attempt != 1 || runs.Load() != 1 {
		t.Fatalf("result %s attempt %d runs %d, want the one run's result", got.Result, got.Attempt, runs.Load())
	}
	if n := h.svc.leases.len(); n != 0 {
		t.Fatalf("%d leases registered after the write, want 0", n)
	}
	assertHistoryValid(t, h, alice, task.ID)
}

// TestCompleterIsolatesPermanentFailure: an outcome the store refuses for
// good (store.ErrInvalid), batched with good ones, neither fails nor stalls
// them: the batch is split, the good outcomes are written, the bad one is
// dropped and counted, later outcomes are written too, and the dropped
// task's lease lapses so recovery runs it again.
func TestCompleterIsolatesPermanentFailure(t *testing.T) {
	t.Parallel()
	hold := &gate{C: make(chan struct{})}
	var (
		calls    atomic.Int32
		poisoned sync.Map // task ID → true
		mixed    atomic.Bool
	)
	hook := func(ctx context.Context, _ string, items []store.FinishItem) error {
		if calls.Add(1) == 1 { // the first write waits, so the next ones batch up
			select {
			case <-hold.C:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		for _, it := range items {
			if _, bad := poisoned.Load(it.TaskID); bad {
				mixed.CompareAndSwap(false, len(items) > 1)
				return fmt.Errorf("finish: %w", store.ErrInvalid)
			}
		}
		return nil
	}
	h := newHarness(t, withFinishHook(hook))
	h.gates = append(h.gates, hold)
	t.Cleanup(hold.open)
	tk := h.watchTicks()
	outcomes := h.watchOutcomes()
	workers := h.watchWorkers()
	h.start()
	for _, ch := range []chan struct{}{tk.recovery, tk.heartbeat, tk.deadline} {
		await(t, "initial tick", ch)
	}

	first := h.submit(alice, "first", "test.echo", `"first"`)
	awaitValue(t, "the first outcome to be handed over", workers, first.ID) // its write now waits
	bad := h.submit(alice, "bad", "test.echo", `"bad"`)
	poisoned.Store(bad.ID, true)
	good := []*dockettype.Task{h.submit(alice, "good-1", "test.echo", `1`), h.submit(alice, "good-2", "test.echo", `2`)}
	awaitN(t, "three more outcomes to be handed over", workers, 3)
	hold.open()

	want := map[string]outcomeStatus{first.ID: outcomeApplied, bad.ID: outcomeDropped, good[0].ID: outcomeApplied, good[1].ID: outcomeApplied}
	for range want {
		o := await(t, "an outcome", outcomes)
		if o.Status != want[o.TaskID] {
			t.Fatalf("outcome of %s: status %d, want %d", o.TaskID, o.Status, want[o.TaskID])
		}
	}
	if !mixed.Load() {
		t.Fatal("the refused outcome was never written in a batch with others: the test did not test isolation")
	}
	for _, task := range append(good, first) {
		h.waitTerminal(alice, task.ID, dockettype.StateSucceeded)
	}
	if n := metric(h.svc.metrics.OutcomesDropped, "online", "invalid"); n != 1 {
		t.Fatalf("outcomes dropped as invalid = %v, want 1", n)
	}
	if got := h.get(alice, bad.ID); got.State != dockettype.StateRunning {
		t.Fatalf("the task whose outcome was refused is %s, want running until its lease lapses", got.State)
	}
	// The completer is not stalled.
	later := h.submit(alice, "later", "test.echo", `"later"`)
	h.waitTerminal(alice, later.ID, dockettype.StateSucceeded)

	// The store takes the outcome again; the lapsed lease is recovered and
	// the task runs a second time.
	poisoned.Delete(bad.ID)
	h.clock.Advance(h.svc.cfg.LeaseTTL + h.svc.cfg.RecoveryInterval)
	await(t, "recovery", tk.recovery)
	if got := h.waitTerminal(alice, bad.ID, dockettype.StateSucceeded); got.Attempt != 2 {
		t.Fatalf("recovered task ended at attempt %d, want 2", got.Attempt)
	}
}

// TestCompleterPerPool: with the offline pool's completer blocked and an
// offline flood backed up behind it (its queue full, its workers blocked
// handing over), online tasks still finish at once: each pool has its own
// finish path.
func TestCompleterPerPool(t *testing.T) {
	t.Parallel()
	offline := &gate{C: make(chan struct{})}
	hook := func(ctx context.Context, fork string, _ []store.FinishItem) error {
		if fork != "pool-"+string(dockettype.PoolOffline) {
			return nil
		}
		select {
		case <-offline.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	h := newHarness(t, withFinishHook(hook), func(h *harness, c *Config) {
		c.FinishBatch = 2 // the offline completer holds 2 + 8 outcomes
		c.QueryTimeout = time.Hour
	})
	h.gates = append(h.gates, offline)
	t.Cleanup(offline.open)
	h.rt.register("test.flood", dockettype.PoolOffline, func(ctx context.Context, inv *Invocation) (json.RawMessage, error) {
		return inv.Input, nil
	})
	workers := h.watchWorkers()
	h.start()
	const flood = 20
	var floodIDs []string
	for i := range flood {
		floodIDs = append(floodIDs, h.submit(alice, fmt.Sprint("flood-", i), "test.flood", fmt.Sprint(i)).ID)
	}
	// At least 1 outcome in the blocked write and 8 queued behind it.
	awaitN(t, "the offline completer to fill up", workers, 9)

	for i := range 10 {
		task := h.submit(alice, fmt.Sprint("online-", i), "test.echo", fmt.Sprint(i))
		h.waitTerminal(alice, task.ID, dockettype.StateSucceeded)
	}
	list, err := h.svc.List(context.Background(), alice, &ListRequest{Pool: dockettype.PoolOffline, State: dockettype.StateSucceeded})
	if err != nil || len(list.Tasks) != 0 {
		t.Fatalf("offline tasks succeeded while their completer was blocked: %d (%v)", len(list.Tasks), err)
	}

	offline.open()
	for _, id := range floodIDs {
		h.waitTerminal(alice, id, dockettype.StateSucceeded)
	}
}

// blockingFinisher records each Finish call's size on calls and answers
// it only when release receives (every item applied).
type blockingFinisher struct {
	calls   chan int
	release chan struct{}
}

func (f *blockingFinisher) Finish(ctx context.Context, p *store.FinishParams) ([]store.FinishResult, error) {
	f.calls <- len(p.Items)
	select {
	case <-f.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	out := make([]store.FinishResult, len(p.Items))
	for i := range out {
		out[i] = store.FinishResult{Applied: true, State: dockettype.StateSucceeded}
	}
	return out, nil
}

// TestCompleterSecondWriteWaitsForAQuarterBatchOfKeyedOutcomes: while a
// write is in flight, outcomes of keyed tasks get a second write only once
// a quarter of a batch of them wait (here 2 of 8), and others wait for the
// write in flight. The channel is unbuffered, so each enqueue returns once
// the loop holds the outcome: a write started for fewer is seen as a call
// of that size.
func TestCompleterSecondWriteWaitsForAQuarterBatchOfKeyedOutcomes(t *testing.T) {
	t.Parallel()
	f := &blockingFinisher{calls: make(chan int, 8), release: make(chan struct{})}
	logger, _ := logtest.New(t)
	sig := &testSignals{}
	sig.holding.init()
	c := newCompleter(newBaseService(logger, clockwork.NewFakeClock(), "completer"), dockettype.PoolOnline, f,
		newLeaseRegistry(), newWaiters(), metrics.New(), newDrainSignal(),
		completerConfig{Batch: 8, QueryTimeout: time.Minute, FlushFor: time.Second}, sig)
	c.in = make(chan *finishRequest)
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	t.Cleanup(func() { close(f.release) }) // first: a failed test's writes end
	n := 0
	outcome := func(keyed bool) *finishRequest {
		n++
		return &finishRequest{keyed: keyed, item: store.FinishItem{Kind: store.FinishSucceed,
			Lease: store.Lease{TaskID: fmt.Sprint("t", n), Epoch: 1}}}
	}
	enqueue := func(keyed bool) {
		t.Helper()
		if !c.enqueue(outcome(keyed)) {
			t.Fatal("the completer refused an outcome")
		}
	}
	// holds waits for the loop to wait again, and says how many it holds.
	// The loop waits once after each outcome it takes in and after each
	// write's end, and the test takes each signal in turn.
	holds := func(want int, why string) {
		t.Helper()
		if got := await(t, "the completer to wait", sig.holding.ch); got != want {
			t.Fatalf("%s: the loop holds %d outcomes, want %d", why, got, want)
		}
	}
	call := func(want int, why string) {
		t.Helper()
		if got := await(t, "write", f.calls); got != want {
			t.Fatalf("%s: a write of %d outcomes, want %d", why, got, want)
		}
	}
	holds(0, "at the start")
	enqueue(true)
	call(1, "the first keyed outcome")
	holds(0, "the first write under way")
	enqueue(true)
	holds(1, "one keyed outcome beside the write in flight (not worth a write)")
	enqueue(true)
	call(2, "two keyed outcomes, a quarter of the batch")
	holds(0, "two writes under way")
	for i := range 3 {
		enqueue(false)
		holds(i+1, "two writes in flight")
	}
	f.release <- struct{}{}
	holds(3, "unkeyed outcomes beside a write in flight")
	f.release <- struct{}{}
	call(3, "every write ended")
	holds(0, "a write under way")
	enqueue(false)
	holds(1, "an unkeyed outcome beside the write in flight")
	enqueue(false)
	holds(2, "unkeyed outcomes beside the write in flight (never a second write)")
	f.release <- struct{}{}
	call(2, "the write in flight ended")
}
