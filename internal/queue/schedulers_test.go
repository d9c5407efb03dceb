package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/logtest"
	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/store/faultstore"
)

// TestExecutionServiceLeaseRecovery: a worker that stops heartbeating loses
// its lease after the TTL; the task runs again under a higher epoch; the old
// worker's late result is refused and counted.
func TestExecutionServiceLeaseRecovery(t *testing.T) {
	t.Parallel()
	var fs *faultstore.Store
	h := newHarness(t, withFaults(&fs))
	firstStarted := make(chan struct{})
	releaseFirst := h.gate()
	var epochs sync.Map
	h.rt.register("test.stall", dockettype.PoolOnline, func(ctx context.Context, inv *Invocation) (json.RawMessage, error) {
		epochs.Store(inv.Task.Attempt, inv.Task.LeaseEpoch)
		if inv.Task.Attempt == 1 {
			close(firstStarted)
			<-releaseFirst.C // ignores its context: a hung worker
			return json.RawMessage(`"first"`), nil
		}
		return json.RawMessage(`"second"`), nil
	})
	tk := h.watchTicks()
	outcomes := h.watchOutcomes()
	h.start()
	for _, ch := range []chan struct{}{tk.recovery, tk.heartbeat, tk.deadline} {
		await(t, "initial", ch)
	}
	claimedAt := h.clock.Now()
	task := h.submit(alice, "k", "test.stall", `1`)
	<-firstStarted

	// The node's heartbeats stop reaching the store. The next heartbeat
	// tick fails while the worker still holds its lease; the tick runs
	// before the recovery that will take the lease away, because the test
	// waits for it before moving the clock further.
	fs.Set("heartbeat", faultstore.Fail(store.ErrUnavailable))
	h.clock.Advance(h.svc.cfg.HeartbeatInterval)
	await(t, "heartbeat", tk.heartbeat)
	await(t, "recovery", tk.recovery)
	if n := metric(h.svc.metrics.StoreErrors, "heartbeat"); n == 0 {
		t.Fatal("heartbeat failures were not counted")
	}
	if n := metric(h.svc.metrics.LeasesRecovered, "requeued"); n != 0 {
		t.Fatalf("lease recovered %v times before it expired", n)
	}

	// Recovery ticks until the lease has expired; each Advance fires the
	// recovery timer the previous tick armed, and the test waits for it.
	for h.clock.Since(claimedAt) <= h.svc.cfg.LeaseTTL {
		h.clock.Advance(h.svc.cfg.RecoveryInterval)
		await(t, "recovery", tk.recovery)
	}
	if n := metric(h.svc.metrics.LeasesRecovered, "requeued"); n != 1 {
		t.Fatalf("leases recovered = %v, want 1", n)
	}
	got := h.waitTerminal(alice, task.ID, dockettype.StateSucceeded)
	if string(got.Result) != `"second"` || got.Attempt != 2 {
		t.Fatalf("result %s attempt %d, want the second attempt's result", got.Result, got.Attempt)
	}
	e1, _ := epochs.Load(1)
	e2, _ := epochs.Load(2)
	if e2.(int64) <= e1.(int64) {
		t.Fatalf("second attempt epoch %d, want > first attempt's %d", e2, e1)
	}

	before := metric(h.svc.metrics.FencingRejections, "finish")
	releaseFirst.open()
	awaitOutcome(t, outcomes, task.ID, outcomeFenced)
	if n := metric(h.svc.metrics.FencingRejections, "finish"); n != before+1 {
		t.Fatalf("finish fencing rejections = %v, want %v", n, before+1)
	}
	if final := h.get(alice, task.ID); string(final.Result) != `"second"` || final.State != dockettype.StateSucceeded {
		t.Fatalf("after the late result: %s %s", final.State, final.Result)
	}
	assertOneTerminalEvent(t, h.svc, alice, task.ID)
}

// TestExecutionServiceHeartbeatRefusalStopsWorker: when another node
// cancels a task (the store changes under this node), the next heartbeat is
// refused and the worker's context is cancelled at once.
func TestExecutionServiceHeartbeatRefusalStopsWorker(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	started := make(chan struct{})
	cause := make(chan error, 1)
	h.rt.register("test.wait", dockettype.PoolOnline, func(ctx context.Context, inv *Invocation) (json.RawMessage, error) {
		close(started)
		<-ctx.Done()
		cause <- context.Cause(ctx)
		return nil, ctx.Err()
	})
	tk := h.watchTicks()
	h.start()
	await(t, "heartbeat", tk.heartbeat)
	task := h.submit(alice, "k", "test.wait", `1`)
	<-started
	// Cancel through the store directly, as another node would.
	if _, err := h.store.Cancel(context.Background(), &store.CancelParams{Now: h.clock.Now(), Tenant: "acme", TaskID: task.ID}); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(h.svc.cfg.HeartbeatInterval)
	await(t, "heartbeat", tk.heartbeat)
	if c := await(t, "the worker to stop after its heartbeat was refused", cause); !errors.Is(c, errLeaseLost) {
		t.Fatalf("worker stopped with cause %v, want lease lost", c)
	}
	if n := metric(h.svc.metrics.FencingRejections, "heartbeat"); n != 1 {
		t.Fatalf("heartbeat fencing rejections = %v, want 1", n)
	}
}

// TestExecutionServiceTimeout: a queued and a running task both end
// timed_out at the first deadline tick at or after their deadline; the
// running worker's context is cancelled and its late result cannot
// overwrite the state.
func TestExecutionServiceTimeout(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(h *harness, c *Config) { c.Offline.Workers = -1 }) // offline tasks stay queued
	started := make(chan struct{})
	stopped := make(chan struct{})
	release := h.gate()
	h.rt.register("test.stubborn", dockettype.PoolOnline, func(ctx context.Context, inv *Invocation) (json.RawMessage, error) {
		close(started)
		<-ctx.Done()
		close(stopped)
		<-release.C
		return json.RawMessage(`"late"`), nil
	})
	h.rt.register("test.never", dockettype.PoolOffline, func(context.Context, *Invocation) (json.RawMessage, error) {
		return nil, errors.New("must not run")
	})
	tk := h.watchTicks()
	outcomes := h.watchOutcomes()
	h.start()
	await(t, "deadline", tk.deadline)
	submit := func(key, wf string) *dockettype.Task {
		res, err := h.svc.Submit(context.Background(), alice, &SubmitRequest{IdempotencyKey: key, Workflow: wf, TimeoutMS: 5000})
		if err != nil {
			t.Fatal(err)
		}
		return res.Task
	}
	running := submit("r", "test.stubborn")
	queued := submit("q", "test.never")
	<-started
	for i := 1; i <= 5; i++ {
		h.clock.Advance(time.Second)
		await(t, "deadline", tk.deadline)
		r, q := h.get(alice, running.ID), h.get(alice, queued.ID)
		if i < 5 && (r.State.Terminal() || q.State.Terminal()) {
			t.Fatalf("at %ds: running=%s queued=%s, want both live before the 5s deadline", i, r.State, q.State)
		}
	}
	for _, id := range []string{running.ID, queued.ID} {
		got := h.get(alice, id)
		if got.State != dockettype.StateTimedOut || got.Error == nil || got.Error.Code != dockettype.CodeDeadlineExceeded {
			t.Fatalf("task %s at its deadline: %s %+v, want timed_out/deadline_exceeded", id, got.State, got.Error)
		}
	}
	await(t, "the running worker's context to be cancelled at the deadline", stopped)
	before := metric(h.svc.metrics.FencingRejections, "finish")
	release.open()
	awaitOutcome(t, outcomes, running.ID, outcomeFenced)
	if n := metric(h.svc.metrics.FencingRejections, "finish"); n != before+1 {
		t.Fatalf("finish fencing rejections = %v, want %v", n, before+1)
	}
	if got := h.get(alice, running.ID); got.State != dockettype.StateTimedOut || got.Result != nil {
		t.Fatalf("late result overwrote the timeout: %s %s", got.State, got.Result)
	}
	if n := metric(h.svc.metrics.DeadlineTimeouts, "queued") + metric(h.svc.metrics.DeadlineTimeouts, "running"); n != 2 {
		t.Fatalf("deadline timeouts = %v, want 2", n)
	}
	assertOneTerminalEvent(t, h.svc, alice, running.ID)
	assertOneTerminalEvent(t, h.svc, alice, queued.ID)
}

// TestExecutionServiceTerminalRaces races cancellation against completion,
// timeout and lease recovery over many tasks; every task must end with
// exactly one terminal event and its reservation released.
func TestExecutionServiceTerminalRaces(t *testing.T) {
	t.Parallel()
	const n = 48
	var fs *faultstore.Store
	h := newHarness(t, withFaults(&fs), func(h *harness, c *Config) {
		c.LeaseTTL, c.HeartbeatInterval, c.RecoveryInterval, c.DeadlineInterval = 3*time.Second, time.Second, time.Second, time.Second
		c.Online = PoolConfig{Workers: 8, Capacity: n}
		c.RetryBackoffBase = 500 * time.Millisecond
	})
	fs.Set("heartbeat", faultstore.FailEvery(3, store.ErrUnavailable)) // some leases lapse
	h.rt.register("test.race", dockettype.PoolOnline, func(ctx context.Context, inv *Invocation) (json.RawMessage, error) {
		var in struct{ Mode int }
		_ = json.Unmarshal(inv.Input, &in)
		switch in.Mode % 4 {
		case 0:
			return inv.Input, nil
		case 1:
			<-ctx.Done()
			return nil, ctx.Err()
		case 2:
			select {
			case <-h.clock.After(time.Duration(in.Mode%7) * time.Second):
				return inv.Input, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		default:
			<-ctx.Done() // hung, then answers late anyway
			return json.RawMessage(`"late"`), nil
		}
	})
	tk := h.watchTicks()
	h.start()
	for _, ch := range []chan struct{}{tk.recovery, tk.heartbeat, tk.deadline} {
		await(t, "initial tick", ch)
	}

	reqs := fresh(n, "race-", "test.race", func(i int) string { return fmt.Sprintf(`{"mode": %d}`, i) })
	for i, req := range reqs {
		req.TimeoutMS = int64(1000 + (i%9)*1000)
	}
	ids := make([]string, n)
	for i, task := range h.submitAll(alice, reqs) {
		ids[i] = task.ID
	}
	var wg sync.WaitGroup
	for i, id := range ids {
		if i%3 != 0 {
			continue
		}
		wg.Go(func() {
			if _, err := h.svc.Cancel(context.Background(), alice, id); err != nil {
				t.Errorf("cancel: %v", err)
			}
		})
	}
	// Time moves while cancels fly: deadlines and lease expiries race them.
	// Each step moves the clock by one scheduler interval and waits for the
	// three schedulers' ticks; every deadline is at most 9 s away, so the
	// deadline scheduler ends every task within about ten steps.
	for step := 0; !allTerminal(t, h.svc, alice, n); step++ {
		if step == 30 {
			t.Fatalf("tasks still live after %d s of fake time", step)
		}
		h.clock.Advance(time.Second)
		h.svc.wakeAll()
		for _, ch := range []chan struct{}{tk.recovery, tk.heartbeat, tk.deadline} {
			await(t, "tick", ch)
		}
	}
	wg.Wait()
	for _, id := range ids {
		assertHistoryValid(t, h, alice, id)
	}
	assertNothingReserved(t, h, alice)
}

// assertNothingReserved checks, through admission, that no task holds a
// reservation any more: with the online pool's capacity and the tenant's
// limit both 1, a submission is still admitted.
func assertNothingReserved(t *testing.T, h *harness, p dockettype.Principal) {
	t.Helper()
	ctx := context.Background()
	one := 1
	if _, err := h.store.UpdateTenant(ctx, &store.UpdateTenantParams{Now: h.clock.Now(), Tenant: p.Tenant, MaxInFlight: &one}); err != nil {
		t.Fatal(err)
	}
	probe := h.node(h.store, func(c *Config) { c.Online = PoolConfig{Workers: -1, Capacity: 1} })
	if _, err := probe.svc.Submit(ctx, p, &SubmitRequest{IdempotencyKey: "reservation-probe", Workflow: "test.echo"}); err != nil {
		t.Fatalf("a submission into a pool and tenant limited to 1 after every task ended: %v (a reservation leaked)", err)
	}
}

// allTerminal reports whether every one of the tenant's n tasks is
// terminal (read through the API).
func allTerminal(t *testing.T, svc *Service, p dockettype.Principal, n int) bool {
	t.Helper()
	list, err := svc.List(context.Background(), p, &ListRequest{Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Tasks) != n {
		t.Fatalf("tenant has %d tasks, want %d", len(list.Tasks), n)
	}
	for _, task := range list.Tasks {
		if !task.State.Terminal() {
			return false
		}
	}
	return true
}

// assertHistoryValid checks one task's history: one terminal event, last;
// epochs never decrease; every transition follows the lifecycle.
func assertHistoryValid(t *testing.T, h *harness, p dockettype.Principal, id string) {
	t.Helper()
	assertOneTerminalEvent(t, h.svc, p, id)
	events, err := h.svc.Events(context.Background(), p, id)
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[[2]dockettype.State]bool{
		{"", dockettype.StateQueued}:                         true,
		{dockettype.StateQueued, dockettype.StateRunning}:    true,
		{dockettype.StateQueued, dockettype.StateCancelled}:  true,
		{dockettype.StateQueued, dockettype.StateTimedOut}:   true,
		{dockettype.StateRunning, dockettype.StateQueued}:    true,
		{dockettype.StateRunning, dockettype.StateSucceeded}: true,
		{dockettype.StateRunning, dockettype.StateFailed}:    true,
		{dockettype.StateRunning, dockettype.StateCancelled}: true,
		{dockettype.StateRunning, dockettype.StateTimedOut}:  true,
	}
	var prev dockettype.State
	var epoch int64
	for _, e := range events {
		if e.From != prev || !allowed[[2]dockettype.State{e.From, e.To}] {
			t.Fatalf("task %s: transition %s→%s after %s is not in the lifecycle: %+v", id, e.From, e.To, prev, events)
		}
		if e.Epoch < epoch {
			t.Fatalf("task %s: epoch went back from %d to %d", id, epoch, e.Epoch)
		}
		prev, epoch = e.To, e.Epoch
	}
}

// TestExecutionServicePartialDependencyFailure: the runtime fails for some
// tasks, evidence writes fail for every task's odd attempts, and the store
// fails chosen operations; every task still ends in a valid terminal state,
// nothing is lost, and the counters show each fault. The service runs on
// the real clock with short retry delays (its backoffs, completer retries
// and claim polls then need no test to move time); the test waits on each
// task's long poll.
func TestExecutionServicePartialDependencyFailure(t *testing.T) {
	t.Parallel()
	const n = 20
	var fs *faultstore.Store
	var evidenceFailures atomic.Int64
	// An attempt's lease epoch is its attempt number here (no lease is
	// recovered): odd attempts cannot write evidence.
	failOddAttempts := withEvidenceHook(func(_ context.Context, l store.Lease) error {
		if l.Epoch%2 == 1 {
			evidenceFailures.Add(1)
			return fmt.Errorf("append evidence: %w", store.ErrUnavailable)
		}
		return nil
	})
	h := newHarness(t, withFaults(&fs), failOddAttempts, func(h *harness, c *Config) {
		c.Clock = clockwork.NewRealClock()
		c.RetryBackoffBase, c.RetryBackoffMax = time.Millisecond, 2*time.Millisecond
		c.PollInterval = 10 * time.Millisecond
		c.DefaultMaxAttempts = 6
		// Leases and deadlines stay out of play (other tests cover them), so
		// that only the injected faults decide attempts.
		c.LeaseTTL, c.HeartbeatInterval, c.DefaultTimeout = time.Hour, 20*time.Minute, 24*time.Hour
		c.Online.Capacity = n
	})
	fs.Set("finish", faultstore.FailEvery(3, store.ErrUnavailable))
	fs.Set("claim", faultstore.FailEvery(4, store.ErrUnavailable))
	h.rt.register("test.flaky", dockettype.PoolOnline, func(ctx context.Context, inv *Invocation) (json.RawMessage, error) {
		var in struct{ N int }
		_ = json.Unmarshal(inv.Input, &in)
		if in.N%5 == 0 {
			return nil, errors.New("dependency down: " + logtest.Canary) // the runtime fails for these tasks
		}
		body := json.RawMessage(`{"n":` + fmt.Sprint(in.N) + `,"note":"` + logtest.Canary + `"}`)
		if err := inv.Evidence.WriteEvidence(ctx, []dockettype.EvidenceItem{{Kind: "test", Body: body}}); err != nil {
			return nil, err
		}
		return inv.Input, nil
	})
	h.start()
	ids := make([]string, n)
	for i, task := range h.submitAll(alice, fresh(n, "k", "test.flaky", func(i int) string { return fmt.Sprintf(`{"n": %d}`, i) })) {
		ids[i] = task.ID
	}
	for i, id := range ids {
		task := waitTerminal(t, h.svc, alice, id)
		want := dockettype.StateSucceeded
		if i%5 != 0 && task.Attempt != 2 {
			t.Errorf("task %d ended at attempt %d, want 2 (the first attempt's evidence write failed)", i, task.Attempt)
		}
		if i%5 == 0 {
			want = dockettype.StateFailed
			if task.Error == nil || task.Error.Code != dockettype.CodeWorkflowError || task.Attempt != 6 {
				t.Errorf("task %d: %+v attempt %d, want failed with workflow_error after 6 attempts", i, task.Error, task.Attempt)
			}
		}
		if task.State != want {
			t.Errorf("task %d ended %s (error %+v, attempt %d), want %s", i, task.State, task.Error, task.Attempt, want)
		}
		assertHistoryValid(t, h, alice, id)
	}
	assertNothingReserved(t, h, alice)
	// The pools poll on the real clock, so claims (some failing) go on:
	// stop the service before comparing the counters with the faults.
	h.stop()
	for _, op := range []string{"finish", "claim"} {
		if got, want := metric(h.svc.metrics.StoreErrors, op), float64(fs.Failures(op)); got != want || want == 0 {
			t.Errorf("store_errors_total{operation=%q} = %v, want %v (> 0)", op, got, want)
		}
	}
	if got, want := metric(h.svc.metrics.StoreErrors, "append_evidence"), float64(evidenceFailures.Load()); got != want || want != n-n/5 {
		t.Errorf("store_errors_total{operation=\"append_evidence\"} = %v, hook failed %v, want both %d (one per task that writes evidence)", got, want, n-n/5)
	}
	if got, want := metric(h.svc.metrics.WorkerErrors, "test.flaky", "workflow_error"), float64(n/5*6); got != want {
		t.Errorf("worker errors = %v, want %v (%d tasks × 6 attempts)", got, want, n/5)
	}
}

// TestExecutionServiceBlockedRecoveryScan: the recovery scan is stuck for
// longer than three lease TTLs; meanwhile no healthy lease expires and every
// deadline fires on time; when it unblocks, recovery catches up in bounded
// batches, at most ScanBatches per tick with a pause between two.
func TestExecutionServiceBlockedRecoveryScan(t *testing.T) {
	t.Parallel()
	var fs *faultstore.Store
	h := newHarness(t, withFaults(&fs), func(h *harness, c *Config) {
		c.Offline.Workers = -1
		c.ScanBatch, c.ScanBatches = 10, 2
		c.QueryTimeout = time.Hour // the stuck scan stays stuck however slow the machine
	})
	release := h.gate()
	fs.Set("find_expired_leases", faultstore.BlockUntil(release.C))
	running := make(chan string, 10)
	h.rt.register("test.healthy", dockettype.PoolOnline, func(ctx context.Context, inv *Invocation) (json.RawMessage, error) {
		running <- inv.Task.ID
		<-ctx.Done()
		return nil, ctx.Err()
	})
	h.rt.register("test.offline", dockettype.PoolOffline, func(context.Context, *Invocation) (json.RawMessage, error) {
		return nil, errors.New("no offline workers in this test")
	})
	tk := h.watchTicks()
	h.svc.signals.recovery.paused.init()
	h.start()
	await(t, "heartbeat", tk.heartbeat)
	await(t, "deadline", tk.deadline)
	// (The recovery scheduler is now stuck in its first scan.)

	ctx := context.Background()
	var healthy []string
	for i := range 3 {
		healthy = append(healthy, h.submit(alice, fmt.Sprint("healthy-", i), "test.healthy", `1`).ID)
	}
	awaitN(t, "healthy tasks to run", running, 3)
	// A running task that must time out at 65s, and a queued one at 45s.
	timed, err := h.svc.Submit(ctx, alice, &SubmitRequest{IdempotencyKey: "timed", Workflow: "test.healthy", TimeoutMS: 65000})
	if err != nil {
		t.Fatal(err)
	}
	queuedTimed, err := h.svc.Submit(ctx, alice, &SubmitRequest{IdempotencyKey: "queued-timed", Workflow: "test.offline", TimeoutMS: 45000})
	if err != nil {
		t.Fatal(err)
	}
	awaitValue(t, "the timed task to run", running, timed.Task.ID)
	// 25 tasks held by a node that died: their leases will expire.
	for i := range 25 {
		h.submit(alice, fmt.Sprint("dead-", i), "test.offline", `1`)
	}
	dead, err := h.store.Claim(ctx, &store.ClaimParams{Now: h.clock.Now(), Queue: store.PoolQueue(dockettype.PoolOffline), Owner: "dead-node", Limit: 100, LeaseTTL: h.svc.cfg.LeaseTTL})
	if err != nil || len(dead) != 26 {
		t.Fatalf("dead node claimed %d tasks (%v), want 26", len(dead), err)
	}

	// Five seconds at a time (one deadline tick each; the deadlines fall on
	// steps), for more than three lease TTLs.
	ttl := h.svc.cfg.LeaseTTL
	const step = 5 * time.Second
	for elapsed := step; elapsed <= 3*ttl+10*time.Second; elapsed += step {
		h.clock.Advance(step)
		await(t, "deadline", tk.deadline)
		if elapsed%h.svc.cfg.HeartbeatInterval == 0 {
			await(t, "heartbeat", tk.heartbeat)
		}
		qt, rt := h.get(alice, queuedTimed.Task.ID).State, h.get(alice, timed.Task.ID).State
		if want := elapsed >= 45*time.Second; (qt == dockettype.StateTimedOut) != want {
			t.Fatalf("at %s the queued task with a 45s deadline is %s", elapsed, qt)
		}
		if want := elapsed >= 65*time.Second; (rt == dockettype.StateTimedOut) != want {
			t.Fatalf("at %s the running task with a 65s deadline is %s", elapsed, rt)
		}
	}
	for _, id := range healthy {
		if got := h.get(alice, id); got.State != dockettype.StateRunning || got.LeaseEpoch != 1 {
			t.Fatalf("healthy task %s after %s of blocked recovery: %s epoch %d, want running under its first lease",
				id, 3*ttl, got.State, got.LeaseEpoch)
		}
	}
	if calls := fs.Calls("recover_leases"); calls != 0 {
		t.Fatalf("recover_leases called %d times while the scan was blocked", calls)
	}

	// The stuck tick ends (it scanned at time 0: nothing had expired). Its
	// next tick is long overdue and starts at once: two batches of 10 (the
	// cap), with a pause on the clock between them.
	release.open()
	await(t, "recovery (the blocked tick)", tk.recovery)
	h.clock.Advance(await(t, "the pause between two batches", h.svc.signals.recovery.paused.ch))
	await(t, "recovery (catch-up, capped)", tk.recovery)
	if calls, n := fs.Calls("recover_leases"), metric(h.svc.metrics.LeasesRecovered, "requeued"); calls != 2 || n != 20 {
		t.Fatalf("after the capped tick: %d batches requeued %v leases, want 2 batches of 10", calls, n)
	}
	// The rest waits for the next tick.
	h.clock.Advance(h.svc.cfg.RecoveryInterval)
	await(t, "recovery (the rest)", tk.recovery)
	if calls, n := fs.Calls("recover_leases"), metric(h.svc.metrics.LeasesRecovered, "requeued"); calls != 3 || n != 25 {
		t.Fatalf("after the next tick: %d batches requeued %v leases, want 3 batches and 25 leases", calls, n)
	}
	for _, id := range healthy {
		if got := h.get(alice, id); got.State != dockettype.StateRunning || got.LeaseEpoch != 1 {
			t.Fatalf("healthy task %s after recovery caught up: %s epoch %d", id, got.State, got.LeaseEpoch)
		}
	}
}

// TestExecutionServiceSchedulerPauseIsCancellable: Stop ends a scheduler
// that is pausing between two batches at once, without the pause running
// out (the harness moves the clock only through the pools' grace period).
func TestExecutionServiceSchedulerPauseIsCancellable(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(h *harness, c *Config) {
		c.Online.Workers, c.Offline.Workers = -1, -1
		c.ScanBatch, c.ScanBatches, c.ScanPause = 1, 10, time.Hour
	})
	tk := h.watchTicks()
	h.svc.signals.recovery.paused.init()
	h.start()
	await(t, "initial recovery", tk.recovery)
	for i := range 3 {
		h.submit(alice, fmt.Sprint("dead-", i), "test.echo", `1`)
	}
	if dead, err := h.store.Claim(context.Background(), &store.ClaimParams{Now: h.clock.Now(), Queue: store.PoolQueue(dockettype.PoolOnline),
		Owner: "dead-node", Limit: 3, LeaseTTL: h.svc.cfg.LeaseTTL}); err != nil || len(dead) != 3 {
		t.Fatalf("dead node claimed %d tasks (%v), want 3", len(dead), err)
	}
	h.clock.Advance(h.svc.cfg.LeaseTTL + h.svc.cfg.RecoveryInterval)
	await(t, "the pause after the first batch", h.svc.signals.recovery.paused.ch)
	h.stop()
	if n := metric(h.svc.metrics.LeasesRecovered, "requeued"); n != 1 {
		t.Fatalf("requeued %v leases before Stop, want 1 (one batch of 1)", n)
	}
}

// TestExecutionServicePoolIsolation: with the offline pool saturated and a
// deep offline backlog, online tasks are claimed and finished at once (no
// poll interval or clock movement needed): the pools share nothing.
func TestExecutionServicePoolIsolation(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	running := make(chan string, 10)
	h.rt.register("test.slow", dockettype.PoolOffline, func(ctx context.Context, inv *Invocation) (json.RawMessage, error) {
		running <- inv.Task.ID
		<-ctx.Done()
		return nil, ctx.Err()
	})
	h.start()
	h.submitAll(alice, fresh(20, "off-", "test.slow", func(int) string { return `1` }))
	awaitN(t, "the offline pool to be saturated", running, h.svc.cfg.Offline.Workers)
	for i := range 10 {
		task := h.submit(alice, fmt.Sprint("on-", i), "test.echo", `{"i":1}`)
		h.waitTerminal(alice, task.ID, dockettype.StateSucceeded)
	}
	if free := h.svc.run.pools[dockettype.PoolOffline].free(); free != 0 {
		t.Fatalf("offline pool free slots = %d, want still saturated", free)
	}
}

// TestExecutionServiceGracefulShutdown: Stop cancels tasks still running
// after the grace period and hands their leases back in the shutdown
// itself: the task is queued at once with a shutdown event, the attempt is
// not charged, and a new node runs it without waiting for a lease to lapse.
func TestExecutionServiceGracefulShutdown(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	running := make(chan string, 1)
	var calls atomic.Int32
	h.rt.register("test.long", dockettype.PoolOnline, func(ctx context.Context, inv *Invocation) (json.RawMessage, error) {
		if calls.Add(1) == 1 {
			running <- inv.Task.ID
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return json.RawMessage(`"resumed"`), nil
	})
	h.start()
	task := h.submit(alice, "long", "test.long", `1`)
	await(t, "the task to run", running)
	h.stop()
	got := h.get(alice, task.ID)
	if got.State != dockettype.StateQueued || got.Attempt != 0 || got.Error != nil {
		t.Fatalf("after shutdown the task is %s attempt %d error %+v, want queued with the attempt not charged", got.State, got.Attempt, got.Error)
	}
	events, err := h.svc.Events(context.Background(), alice, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if last := events[len(events)-1]; last.From != dockettype.StateRunning || last.To != dockettype.StateQueued || last.Code != dockettype.CodeShutdown {
		t.Fatalf("last event %+v, want running→queued with code shutdown", last)
	}
	if n := metric(h.svc.metrics.LeasesReleased, "online"); n != 1 {
		t.Fatalf("leases released = %v, want 1", n)
	}
	// A new node on the same database runs it at once: no clock moves.
	h2 := h.node(h.store, nil).start()
	got = h2.waitTerminal(alice, task.ID, dockettype.StateSucceeded)
	if string(got.Result) != `"resumed"` || got.Attempt != 1 {
		t.Fatalf("result %s attempt %d, want the resumed result as attempt 1", got.Result, got.Attempt)
	}
	assertHistoryValid(t, h2, alice, task.ID)
}

// TestExecutionServiceStopAbandonsStuckWorker: a workflow that ignores its
// context does not hold Stop beyond the grace period plus ShutdownAbandon:
// it is abandoned and counted, its lease lapses, and another node's
// recovery runs the task again (that attempt is charged).
func TestExecutionServiceStopAbandonsStuckWorker(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(h *harness, c *Config) { c.ShutdownAbandon = 5 * time.Second })
	stuck := h.gate()
	running := make(chan string, 1)
	var calls atomic.Int32
	h.rt.register("test.stuck", dockettype.PoolOnline, func(ctx context.Context, inv *Invocation) (json.RawMessage, error) {
		if calls.Add(1) == 1 {
			running <- inv.Task.ID
			<-stuck.C // ignores its context
			return json.RawMessage(`"too late"`), nil
		}
		return json.RawMessage(`"second"`), nil
	})
	h.start()
	task := h.submit(alice, "stuck", "test.stuck", `1`)
	await(t, "the task to run", running)
	stopped := make(chan struct{})
	go func() {
		h.svc.Stop()
		close(stopped)
	}()
	// Only the online pool has a task, so only it arms the two timers.
	h.clock.Advance(await(t, "the grace timer", h.svc.signals.grace.ch).D)
	h.clock.Advance(await(t, "the abandon timer", h.svc.signals.abandon.ch).D)
	await(t, "Stop to return", stopped)
	if n := metric(h.svc.metrics.WorkersAbandoned, "online"); n != 1 {
		t.Fatalf("workers abandoned = %v, want 1", n)
	}
	if got := h.get(alice, task.ID); got.State != dockettype.StateRunning || got.Attempt != 1 {
		t.Fatalf("after Stop the abandoned task is %s attempt %d, want running (its lease lapses)", got.State, got.Attempt)
	}
	stuck.open() // the abandoned worker returns; its result has nowhere to go

	h2 := h.node(h.store, nil)
	tk := h2.watchTicks()
	h2.start()
	await(t, "recovery", tk.recovery)
	h.clock.Advance(h.svc.cfg.LeaseTTL + h.svc.cfg.RecoveryInterval)
	await(t, "recovery", tk.recovery)
	got := h2.waitTerminal(alice, task.ID, dockettype.StateSucceeded)
	if string(got.Result) != `"second"` || got.Attempt != 2 {
		t.Fatalf("result %s attempt %d, want the second attempt's result", got.Result, got.Attempt)
	}
	assertHistoryValid(t, h2, alice, task.ID)
}

// TestExecutionServiceStopAfterStartContextEnds is the shutdown `docket
// serve` and Server.Run perform: the context given to Start is cancelled
// (SIGTERM) before Stop. The service keeps running until Stop and then
// stops in its own order: a task that finishes inside the grace period has
// its outcome written, one still running after it is handed back with a
// shutdown event, its attempt not charged.
func TestExecutionServiceStopAfterStartContextEnds(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(h *harness, c *Config) { c.ShutdownGrace = 10 * time.Second })
	running := make(chan string, 2)
	finish := h.gate()
	h.rt.register("test.short", dockettype.PoolOnline, func(ctx context.Context, inv *Invocation) (json.RawMessage, error) {
		running <- inv.Task.ID
		<-finish.C
		return json.RawMessage(`"done"`), nil
	})
	h.rt.register("test.long", dockettype.PoolOnline, func(ctx context.Context, inv *Invocation) (json.RawMessage, error) {
		running <- inv.Task.ID
		<-ctx.Done()
		return nil, ctx.Err()
	})
	outcomes := h.watchOutcomes()
	ctx, cancel := context.WithCancel(context.Background())
	if err := h.svc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	short := h.submit(alice, "short", "test.short", `1`)
	long := h.submit(alice, "long", "test.long", `1`)
	awaitN(t, "both tasks to run", running, 2)
	cancel() // the signal arrives
	stopped := make(chan struct{})
	go func() {
		h.svc.Stop()
		close(stopped)
	}()
	grace := await(t, "the grace timer", h.svc.signals.grace.ch)
	finish.open() // the short task finishes inside the grace period
	awaitOutcome(t, outcomes, short.ID, outcomeApplied)
	h.clock.Advance(grace.D)
	await(t, "Stop to return", stopped)

	if got := h.get(alice, short.ID); got.State != dockettype.StateSucceeded || string(got.Result) != `"done"` {
		t.Errorf("the task that finished in the grace period is %s %s, want succeeded", got.State, got.Result)
	}
	got := h.get(alice, long.ID)
	if got.State != dockettype.StateQueued || got.Attempt != 0 {
		t.Errorf("the task cut short is %s attempt %d, want queued, the attempt not charged", got.State, got.Attempt)
	}
	events, err := h.svc.Events(context.Background(), alice, long.ID)
	if err != nil {
		t.Fatal(err)
	}
	if last := events[len(events)-1]; last.To != dockettype.StateQueued || last.Code != dockettype.CodeShutdown {
		t.Errorf("last event of the task cut short %+v, want running→queued with code shutdown", last)
	}
	if n := metric(h.svc.metrics.OutcomesDropped, "online", "stopping"); n != 0 {
		t.Errorf("outcomes dropped = %v, want 0", n)
	}
}
