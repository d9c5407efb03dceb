package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/logtest"
	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/store/faultstore"
)

// TestExecutionServiceLeaseRecovery: a worker that stops heartbeating loses
// its lease after the TTL; the task runs again under a higher epoch; the old
// worker's late result is refused and counted.
func TestExecutionServiceLeaseRecovery(t *testing.T) {
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
	eventually(t, "the hung worker's result to be fenced", func() bool {
		return metric(h.svc.metrics.FencingRejections, "finish") == before+1
	})
	if final := h.get(alice, task.ID); string(final.Result) != `"second"` || final.State != dockettype.StateSucceeded {
		t.Fatalf("after the late result: %s %s", final.State, final.Result)
	}
	assertOneTerminalEvent(t, h.svc, alice, task.ID)
}

// TestExecutionServiceHeartbeatRefusalStopsWorker: when another node
// cancels a task (the store changes under this node), the next heartbeat is
// refused and the worker's context is cancelled at once.
func TestExecutionServiceHeartbeatRefusalStopsWorker(t *testing.T) {
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
	select {
	case c := <-cause:
		if !errors.Is(c, errLeaseLost) {
			t.Fatalf("worker stopped with cause %v, want lease lost", c)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("worker not stopped after its heartbeat was refused")
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
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("running worker's context was not cancelled at the deadline")
	}
	before := metric(h.svc.metrics.FencingRejections, "finish")
	release.open()
	eventually(t, "the late result to be fenced", func() bool {
		return metric(h.svc.metrics.FencingRejections, "finish") == before+1
	})
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
	var fs *faultstore.Store
	h := newHarness(t, withFaults(&fs), func(h *harness, c *Config) {
		c.LeaseTTL, c.HeartbeatInterval, c.RecoveryInterval = 3*time.Second, time.Second, time.Second
		c.Online.Workers = 8
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
	h.start()

	const n = 120
	ids := make([]string, n)
	for i := range n {
		res, err := h.svc.Submit(context.Background(), alice, &SubmitRequest{
			IdempotencyKey: fmt.Sprint("race-", i), Workflow: "test.race",
			Input: json.RawMessage(fmt.Sprintf(`{"mode": %d}`, i)), TimeoutMS: int64(1000 + (i%9)*1000),
		})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = res.Task.ID
	}
	var wg sync.WaitGroup
	for i, id := range ids {
		if i%3 != 0 {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := h.svc.Cancel(context.Background(), alice, id); err != nil {
				t.Errorf("cancel: %v", err)
			}
		}()
	}
	// Time moves while cancels fly: deadlines and lease expiries race them.
	stop := make(chan struct{})
	var clockWG sync.WaitGroup
	clockWG.Add(1)
	go func() {
		defer clockWG.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
				h.clock.Advance(200 * time.Millisecond)
				h.svc.wakeAll()
			}
		}
	}()
	wg.Wait()
	eventually(t, "every task to be terminal", func() bool {
		tasks, err := getTasks(context.Background(), h.store, "acme", ids)
		if err != nil {
			return false
		}
		for _, task := range tasks {
			if !task.State.Terminal() {
				return false
			}
		}
		return true
	})
	close(stop)
	clockWG.Wait()
	for _, id := range ids {
		assertHistoryValid(t, h, alice, id)
	}
	usage, err := getUsage(context.Background(), h.store)
	if err != nil {
		t.Fatal(err)
	}
	if usage.Pools[dockettype.PoolOnline] != 0 || usage.Tenants["acme"] != 0 {
		t.Fatalf("reservations left after every task ended: %+v", usage)
	}
}

// assertHistoryValid checks one task's history: one terminal event, last;
// epochs never decrease; every transition follows the lifecycle; the
// reservation is released.
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
	if task := h.get(alice, id); !task.State.Terminal() || prev != task.State {
		t.Fatalf("task %s: state %s, last event to %s; want the same terminal state", id, task.State, prev)
	}
}

// TestExecutionServicePartialDependencyFailure: the runtime fails for some
// tasks, evidence writes fail for some, and the store fails chosen
// operations; every task still ends in a valid terminal state, nothing is
// lost, and the counters show each fault.
func TestExecutionServicePartialDependencyFailure(t *testing.T) {
	var fs *faultstore.Store
	h := newHarness(t, withFaults(&fs), func(h *harness, c *Config) {
		c.RetryBackoffBase, c.RetryBackoffMax = time.Second, 2*time.Second
		c.DefaultMaxAttempts = 6
		// This test drives the clock fast; keep leases and deadlines out of
		// play (other tests cover them) so that only the injected faults
		// decide attempts.
		c.LeaseTTL, c.HeartbeatInterval, c.DefaultTimeout = time.Hour, 20*time.Minute, 24*time.Hour
	})
	fs.Set("append_evidence", faultstore.FailEvery(2, store.ErrUnavailable))
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
	const n = 30
	ids := make([]string, n)
	for i := range n {
		ids[i] = h.submit(alice, fmt.Sprint("k", i), "test.flaky", fmt.Sprintf(`{"n": %d}`, i)).ID
	}
	eventually(t, "every task to be terminal", func() bool {
		h.clock.Advance(200 * time.Millisecond) // backoffs, completer retries
		h.svc.wakeAll()
		tasks, err := getTasks(context.Background(), h.store, "acme", ids)
		if err != nil || len(tasks) != n {
			return false
		}
		for _, task := range tasks {
			if !task.State.Terminal() {
				return false
			}
		}
		return true
	})
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(h.logs.String())
		}
	})
	for i, id := range ids {
		task := h.get(alice, id)
		want := dockettype.StateSucceeded
		if i%5 == 0 {
			want = dockettype.StateFailed
			if task.Error == nil || task.Error.Code != dockettype.CodeWorkflowError || task.Attempt != 6 {
				t.Errorf("task %d: %+v attempt %d, want failed with workflow_error after 6 attempts", i, task.Error, task.Attempt)
			}
		}
		if task.State != want {
			t.Errorf("task %d ended %s, want %s", i, task.State, want)
		}
		assertHistoryValid(t, h, alice, id)
	}
	for _, op := range []string{"finish", "claim", "append_evidence"} {
		if got, want := metric(h.svc.metrics.StoreErrors, op), float64(fs.Failures(op)); got != want || want == 0 {
			t.Errorf("store_errors_total{operation=%q} = %v, want %v (> 0)", op, got, want)
		}
	}
	if got := metric(h.svc.metrics.WorkerErrors, "test.flaky", "workflow_error"); got != 6*6 {
		t.Errorf("worker errors = %v, want 36 (6 tasks × 6 attempts)", got)
	}
}

// TestExecutionServiceBlockedRecoveryScan: the recovery scan is stuck for
// longer than three lease TTLs; meanwhile no healthy lease expires and every
// deadline fires on time; when it unblocks, recovery catches up in bounded
// batches.
func TestExecutionServiceBlockedRecoveryScan(t *testing.T) {
	var fs *faultstore.Store
	h := newHarness(t, withFaults(&fs), func(h *harness, c *Config) {
		c.Offline.Workers = -1
		c.ScanBatch = 10
	})
	release := h.gate()
	fs.Set("find_expired_leases", faultstore.BlockUntil(release.C))
	h.rt.register("test.healthy", dockettype.PoolOnline, func(ctx context.Context, inv *Invocation) (json.RawMessage, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	h.rt.register("test.offline", dockettype.PoolOffline, func(context.Context, *Invocation) (json.RawMessage, error) {
		return nil, errors.New("no offline workers in this test")
	})
	tk := h.watchTicks()
	h.start()
	await(t, "heartbeat", tk.heartbeat)
	await(t, "deadline", tk.deadline)
	// (The recovery scheduler is now stuck in its first scan.)

	ctx := context.Background()
	var healthy []string
	for i := range 3 {
		healthy = append(healthy, h.submit(alice, fmt.Sprint("healthy-", i), "test.healthy", `1`).ID)
	}
	eventually(t, "healthy tasks to run", func() bool { return h.svc.leases.len() == 3 })
	// A running task that must time out at 65s, and a queued one at 45s.
	timed, err := h.svc.Submit(ctx, alice, &SubmitRequest{IdempotencyKey: "timed", Workflow: "test.healthy", TimeoutMS: 65000})
	if err != nil {
		t.Fatal(err)
	}
	queuedTimed, err := h.svc.Submit(ctx, alice, &SubmitRequest{IdempotencyKey: "queued-timed", Workflow: "test.offline", TimeoutMS: 45000})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the timed task to run", func() bool { return h.svc.leases.len() == 4 })
	// 25 tasks held by a node that died: their leases will expire.
	for i := range 25 {
		h.submit(alice, fmt.Sprint("dead-", i), "test.offline", `1`)
	}
	dead, err := h.store.Claim(ctx, &store.ClaimParams{Now: h.clock.Now(), Pool: dockettype.PoolOffline, Owner: "dead-node", Limit: 100, LeaseTTL: h.svc.cfg.LeaseTTL})
	if err != nil || len(dead) != 26 {
		t.Fatalf("dead node claimed %d tasks (%v), want 26", len(dead), err)
	}

	ttl := h.svc.cfg.LeaseTTL
	for elapsed := time.Second; elapsed <= 3*ttl+10*time.Second; elapsed += time.Second {
		h.clock.Advance(time.Second)
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

	release.open()
	await(t, "recovery (the blocked tick)", tk.recovery)
	h.clock.Advance(h.svc.cfg.RecoveryInterval)
	await(t, "recovery (catch-up)", tk.recovery)
	// 25 dead leases with ScanBatch 10: three bounded batches (10, 10, 5).
	if calls := fs.Calls("recover_leases"); calls != 3 {
		t.Fatalf("recover_leases called %d times, want 3 batches", calls)
	}
	if n := metric(h.svc.metrics.LeasesRecovered, "requeued"); n != 25 {
		t.Fatalf("requeued %v leases, want 25", n)
	}
	for _, id := range healthy {
		if got := h.get(alice, id); got.State != dockettype.StateRunning || got.LeaseEpoch != 1 {
			t.Fatalf("healthy task %s after recovery caught up: %s epoch %d", id, got.State, got.LeaseEpoch)
		}
	}
}

// TestExecutionServicePoolIsolation: with the offline pool saturated and a
// deep offline backlog, online tasks are claimed and finished at once (no
// poll interval or clock movement needed): the pools share nothing.
func TestExecutionServicePoolIsolation(t *testing.T) {
	h := newHarness(t)
	h.rt.register("test.slow", dockettype.PoolOffline, func(ctx context.Context, inv *Invocation) (json.RawMessage, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	h.start()
	for i := range 300 {
		h.submit(alice, fmt.Sprint("off-", i), "test.slow", `1`)
	}
	eventually(t, "the offline pool to be saturated", func() bool {
		return h.svc.pools[dockettype.PoolOffline].free() == 0
	})
	for i := range 20 {
		task := h.submit(alice, fmt.Sprint("on-", i), "test.echo", `{"i":1}`)
		h.waitTerminal(alice, task.ID, dockettype.StateSucceeded)
	}
	if free := h.svc.pools[dockettype.PoolOffline].free(); free != 0 {
		t.Fatalf("offline pool free slots = %d, want still saturated", free)
	}
}

// TestExecutionServiceGracefulShutdown: Stop cancels tasks still running
// after the grace period without failing them; their leases lapse and a new
// node's recovery runs them again.
func TestExecutionServiceGracefulShutdown(t *testing.T) {
	h := newHarness(t)
	started := make(chan struct{}, 1)
	h.rt.register("test.long", dockettype.PoolOnline, func(ctx context.Context, inv *Invocation) (json.RawMessage, error) {
		if inv.Task.Attempt == 1 {
			started <- struct{}{}
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return json.RawMessage(`"resumed"`), nil
	})
	h.start()
	task := h.submit(alice, "long", "test.long", `1`)
	<-started
	h.stop()
	if got := h.get(alice, task.ID); got.State != dockettype.StateRunning {
		t.Fatalf("after shutdown the task is %s, want still running (its lease lapses)", got.State)
	}
	// A new node on the same database.
	h2 := &harness{t: t, store: h.store, st: h.store, rt: h.rt, clock: h.clock}
	cfg := h.svc.cfg
	cfg.NodeID = "node-b"
	var err error
	h2.svc, err = New(h.store, h.rt, cfg)
	if err != nil {
		t.Fatal(err)
	}
	tk := h2.watchTicks()
	h2.start()
	await(t, "recovery", tk.recovery)
	h.clock.Advance(cfg.LeaseTTL + cfg.RecoveryInterval)
	await(t, "recovery", tk.recovery)
	got := h2.waitTerminal(alice, task.ID, dockettype.StateSucceeded)
	if string(got.Result) != `"resumed"` {
		t.Fatalf("result %s", got.Result)
	}
}
