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
)

// errorCode extracts the API code of a Submit/Get error.
func errorCode(t *testing.T, err error) dockettype.Code {
	t.Helper()
	var de *dockettype.Error
	if !errors.As(err, &de) {
		t.Fatalf("error %v is not a *dockettype.Error", err)
	}
	return de.Code
}

func TestExecutionServiceConcurrentIdempotency(t *testing.T) {
	t.Parallel()
	h := newHarness(t).start()
	const n = 64
	req := func(input string) *SubmitRequest {
		return &SubmitRequest{IdempotencyKey: "order-42", Workflow: "test.echo", Input: json.RawMessage(input)}
	}
	var wg sync.WaitGroup
	ids := make([]string, n)
	replays := make([]bool, n)
	errs := make([]error, n)
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			res, err := h.svc.Submit(context.Background(), alice, req(`{"order": 42, "note": "`+logtest.Canary+`"}`))
			if err != nil {
				errs[i] = err
				return
			}
			ids[i], replays[i] = res.Task.ID, res.Replayed
		}()
	}
	close(start)
	wg.Wait()
	created := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("submit %d: %v", i, errs[i])
		}
		if ids[i] != ids[0] {
			t.Fatalf("submit %d got task %s, submit 0 got %s: want one task per key", i, ids[i], ids[0])
		}
		if !replays[i] {
			created++
		}
	}
	if created != 1 {
		t.Fatalf("%d submissions created a task, want exactly 1", created)
	}
	list, err := h.svc.List(context.Background(), alice, &ListRequest{Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Tasks) != 1 {
		t.Fatalf("tenant has %d tasks, want 1", len(list.Tasks))
	}

	// Whitespace is not a different request; a changed body is.
	res, err := h.svc.Submit(context.Background(), alice, req(`{ "order":42,  "note":"`+logtest.Canary+`" }`))
	if err != nil || !res.Replayed || res.Task.ID != ids[0] {
		t.Fatalf("reformatted replay: res=%+v err=%v, want replay of %s", res, err, ids[0])
	}
	_, err = h.svc.Submit(context.Background(), alice, req(`{"order": 43}`))
	if code := errorCode(t, err); code != dockettype.CodeIdempotencyConflict {
		t.Fatalf("changed body: code %s, want idempotency_conflict", code)
	}
	// The same key is independent for another tenant.
	other := h.submit(principal("globex", "bob"), "order-42", "test.echo", `{"order": 42}`)
	if other.ID == ids[0] {
		t.Fatal("another tenant's submission with the same key replayed the first tenant's task")
	}
}

func TestExecutionServiceBoundedGlobalAdmission(t *testing.T) {
	t.Parallel()
	const capacity = 8
	h := newHarness(t, func(h *harness, c *Config) {
		c.Online = PoolConfig{Workers: 2 * capacity, Capacity: capacity}
	})
	release := h.gate()
	h.rt.register("test.hold", dockettype.PoolOnline, func(ctx context.Context, inv *Invocation) (json.RawMessage, error) {
		<-release.C
		return json.RawMessage(`true`), nil
	})
	h.start()

	var wg sync.WaitGroup
	var mu sync.Mutex
	admitted := map[string]dockettype.Principal{}
	full := 0
	for i := range 4 * capacity {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := principal(fmt.Sprintf("t%d", i%3), "p")
			res, err := h.svc.Submit(context.Background(), p,
				&SubmitRequest{IdempotencyKey: fmt.Sprintf("k-%d", i), Workflow: "test.hold"})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				admitted[res.Task.ID] = p
			case errorCode(t, err) == dockettype.CodeQueueFull:
				full++
				var de *dockettype.Error
				errors.As(err, &de)
				if de.RetryAfter <= 0 {
					t.Errorf("queue_full without Retry-After")
				}
			default:
				t.Errorf("submit %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	if len(admitted) != capacity || full != 3*capacity {
		t.Fatalf("admitted %d and refused %d, want %d and %d", len(admitted), full, capacity, 3*capacity)
	}
	// Every admitted task is live, and the pool takes no more.
	live := 0
	for i := range 3 {
		list, err := h.svc.List(context.Background(), principal(fmt.Sprintf("t%d", i), "p"), &ListRequest{Pool: dockettype.PoolOnline, Limit: 500})
		if err != nil {
			t.Fatal(err)
		}
		for _, task := range list.Tasks {
			if !task.State.Terminal() {
				live++
			}
		}
	}
	if live != capacity {
		t.Fatalf("%d live online tasks, want %d", live, capacity)
	}
	if _, err := h.svc.Submit(context.Background(), alice, &SubmitRequest{IdempotencyKey: "one-more", Workflow: "test.hold"}); errorCode(t, err) != dockettype.CodeQueueFull {
		t.Fatalf("submit to the full pool: %v, want queue_full", err)
	}
	// Offline capacity is separate.
	if _, err := h.svc.Submit(context.Background(), alice, &SubmitRequest{IdempotencyKey: "off", Workflow: "test.hold", Pool: dockettype.PoolOffline}); err != nil {
		t.Fatalf("offline submit while online is full: %v", err)
	}

	// Completions free capacity.
	release.open()
	for id, p := range admitted {
		h.waitTerminal(p, id, dockettype.StateSucceeded)
	}
	if _, err := h.svc.Submit(context.Background(), alice, &SubmitRequest{IdempotencyKey: "after", Workflow: "test.echo"}); err != nil {
		t.Fatalf("submit after completions: %v", err)
	}
}

func TestExecutionServiceTenantLimit(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(h *harness, c *Config) { c.Online.Workers = -1 }).start() // no workers: tasks stay queued
	limit := 2
	if _, err := h.store.UpdateTenant(context.Background(), &store.UpdateTenantParams{Now: baseTime, Tenant: "acme", MaxInFlight: &limit}); err != nil {
		t.Fatal(err)
	}
	first := h.submit(alice, "a", "test.echo", `1`)
	h.submit(alice, "b", "test.echo", `2`)
	_, err := h.svc.Submit(context.Background(), alice, &SubmitRequest{IdempotencyKey: "c", Workflow: "test.echo"})
	if code := errorCode(t, err); code != dockettype.CodeTenantQuotaExceeded {
		t.Fatalf("third task: %s, want tenant_quota_exceeded", code)
	}
	// Another tenant is not limited by acme's limit.
	h.submit(principal("globex", "bob"), "c", "test.echo", `3`)
	// Cancelling frees one slot; the refused key was not bound and now works.
	if _, err := h.svc.Cancel(context.Background(), alice, first.ID); err != nil {
		t.Fatal(err)
	}
	h.submit(alice, "c", "test.echo", `3`)
}

func TestExecutionServiceServerOwnedAuthor(t *testing.T) {
	t.Parallel()
	h := newHarness(t).start()
	task := h.submit(alice, "k", "test.echo", `{"author": "mallory", "tenant": "globex"}`)
	if task.Author != "alice" || task.Tenant != "acme" {
		t.Fatalf("author/tenant = %s/%s, want alice/acme from the principal", task.Author, task.Tenant)
	}
	// Another tenant cannot see, cancel or read the history of the task.
	mallory := principal("globex", "mallory")
	for name, call := range map[string]func() error{
		"get":      func() error { _, err := h.svc.Get(context.Background(), mallory, task.ID); return err },
		"cancel":   func() error { _, err := h.svc.Cancel(context.Background(), mallory, task.ID); return err },
		"events":   func() error { _, err := h.svc.Events(context.Background(), mallory, task.ID); return err },
		"evidence": func() error { _, err := h.svc.Evidence(context.Background(), mallory, task.ID); return err },
	} {
		if code := errorCode(t, call()); code != dockettype.CodeNotFound {
			t.Errorf("%s by another tenant: %s, want not_found", name, code)
		}
	}
	if got := h.waitTerminal(alice, task.ID, dockettype.StateSucceeded); got.Author != "alice" {
		t.Fatalf("author after run = %s", got.Author)
	}
}

func TestExecutionServiceCancel(t *testing.T) {
	t.Parallel()
	started := make(chan string, 1)
	late := make(chan struct{})
	h := newHarness(t)
	outcomes := h.watchOutcomes()
	workers := h.watchWorkers()
	// A workflow that ignores cancellation and returns a result anyway.
	h.rt.register("test.stubborn", dockettype.PoolOnline, func(ctx context.Context, inv *Invocation) (json.RawMessage, error) {
		started <- inv.Task.ID
		<-ctx.Done()
		<-late
		return json.RawMessage(`"` + logtest.Canary + `"`), nil
	})
	h.rt.register("test.polite", dockettype.PoolOnline, func(ctx context.Context, inv *Invocation) (json.RawMessage, error) {
		started <- inv.Task.ID
		<-ctx.Done()
		return nil, ctx.Err()
	})
	h.start()

	t.Run("queued", func(t *testing.T) {
		hq := newHarness(t, func(h *harness, c *Config) { c.Online.Workers = -1 }).start()
		task := hq.submit(alice, "q", "test.echo", `1`)
		got, err := hq.svc.Cancel(context.Background(), alice, task.ID)
		if err != nil || got.State != dockettype.StateCancelled {
			t.Fatalf("cancel queued: %+v %v", got, err)
		}
		// Cancelling again returns the terminal task unchanged.
		again, err := hq.svc.Cancel(context.Background(), alice, task.ID)
		if err != nil || again.State != dockettype.StateCancelled || again.FinishedAt == nil || !again.FinishedAt.Equal(*got.FinishedAt) {
			t.Fatalf("second cancel: %+v %v", again, err)
		}
	})

	t.Run("running, late result fenced", func(t *testing.T) {
		task := h.submit(alice, "r", "test.stubborn", `1`)
		if id := <-started; id != task.ID {
			t.Fatalf("started %s, want %s", id, task.ID)
		}
		got, err := h.svc.Cancel(context.Background(), alice, task.ID)
		if err != nil || got.State != dockettype.StateCancelled {
			t.Fatalf("cancel running: %+v %v", got, err)
		}
		before := metric(h.svc.metrics.FencingRejections, "finish")
		close(late) // the worker now returns its result, too late
		awaitOutcome(t, outcomes, task.ID, outcomeFenced)
		if n := metric(h.svc.metrics.FencingRejections, "finish"); n != before+1 {
			t.Fatalf("finish fencing rejections = %v, want %v", n, before+1)
		}
		final := h.get(alice, task.ID)
		if final.State != dockettype.StateCancelled || final.Result != nil {
			t.Fatalf("after late result: state %s result %s, want cancelled without result", final.State, final.Result)
		}
		assertOneTerminalEvent(t, h.svc, alice, task.ID)
	})

	t.Run("running, worker honours cancellation", func(t *testing.T) {
		task := h.submit(alice, "p", "test.polite", `1`)
		<-started
		if _, err := h.svc.Cancel(context.Background(), alice, task.ID); err != nil {
			t.Fatal(err)
		}
		awaitValue(t, "the worker to return", workers, task.ID)
		if n := h.svc.leases.len(); n != 0 {
			t.Fatalf("%d leases held after the cancelled worker returned, want 0", n)
		}
		if got := metric(h.svc.metrics.WorkerErrors, "test.polite", "workflow_error"); got != 0 {
			t.Fatalf("cancellation counted as %v worker errors, want 0", got)
		}
		assertOneTerminalEvent(t, h.svc, alice, task.ID)
	})
}

// TestExecutionServiceFencing: a result under an old epoch, after the task
// was recovered and claimed again, is refused and the newer outcome stands.
func TestExecutionServiceFencing(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(h *harness, c *Config) { c.Online.Workers = -1 }).start()
	task := h.submit(alice, "f", "test.echo", `1`)
	ctx := context.Background()
	claim := func() *store.ClaimedTask {
		c, err := h.store.Claim(ctx, &store.ClaimParams{Now: h.clock.Now(), Queue: store.PoolQueue(dockettype.PoolOnline), Owner: "w", Limit: 1, LeaseTTL: h.svc.cfg.LeaseTTL})
		if err != nil || len(c) != 1 {
			t.Fatalf("claim: %v %v", c, err)
		}
		return c[0]
	}
	first := claim()
	// The first worker stalls past its lease; recovery re-queues the task.
	h.clock.Advance(h.svc.cfg.LeaseTTL + time.Second)
	if err := h.svc.run.recovery.tick(ctx); err != nil {
		t.Fatal(err)
	}
	second := claim()
	if second.Task.LeaseEpoch <= first.Task.LeaseEpoch {
		t.Fatalf("epoch after re-claim %d, want > %d", second.Task.LeaseEpoch, first.Task.LeaseEpoch)
	}
	res, err := h.store.Finish(ctx, &store.FinishParams{Now: h.clock.Now(), Items: []store.FinishItem{
		{Lease: second.Lease(), Kind: store.FinishSucceed, Result: []byte(`"new"`)},
		{Lease: first.Lease(), Kind: store.FinishSucceed, Result: []byte(`"stale"`)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if !res[0].Applied || res[1].Applied {
		t.Fatalf("applied = %v/%v, want the current lease applied and the stale one refused", res[0].Applied, res[1].Applied)
	}
	got := h.get(alice, task.ID)
	if got.State != dockettype.StateSucceeded || string(got.Result) != `"new"` {
		t.Fatalf("state %s result %s, want succeeded with the current worker's result", got.State, got.Result)
	}
	assertOneTerminalEvent(t, h.svc, alice, task.ID)
}

// assertOneTerminalEvent checks the task's history: exactly one event into a
// terminal state, and it is the last one.
func assertOneTerminalEvent(t *testing.T, svc *Service, p dockettype.Principal, id string) []dockettype.Event {
	t.Helper()
	events, err := svc.Events(context.Background(), p, id)
	if err != nil {
		t.Fatal(err)
	}
	terminal := 0
	for _, e := range events {
		if e.To.Terminal() {
			terminal++
		}
	}
	if terminal != 1 || !events[len(events)-1].To.Terminal() {
		t.Fatalf("history %+v: want exactly one terminal event, last", events)
	}
	return events
}

// TestExecutionServiceEvidenceIsFenced: evidence written under a lease that
// is no longer current (the task was cancelled) is refused and counted, and
// nothing is stored.
func TestExecutionServiceEvidenceIsFenced(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	wrote := make(chan struct{})
	proceed := make(chan struct{})
	lateErr := make(chan error, 1)
	h.rt.register("test.evidence", dockettype.PoolOnline, func(ctx context.Context, inv *Invocation) (json.RawMessage, error) {
		body := json.RawMessage(`{"note":"` + logtest.Canary + `"}`)
		if err := inv.Evidence.WriteEvidence(ctx, []dockettype.EvidenceItem{{Kind: "before", Body: body}}); err != nil {
			return nil, err
		}
		close(wrote)
		<-proceed
		err := inv.Evidence.WriteEvidence(context.Background(), []dockettype.EvidenceItem{{Kind: "after", Body: body}})
		lateErr <- err
		return nil, err
	})
	h.start()
	task := h.submit(alice, "e", "test.evidence", `1`)
	<-wrote
	if _, err := h.svc.Cancel(context.Background(), alice, task.ID); err != nil {
		t.Fatal(err)
	}
	close(proceed)
	// Workflow code tests the public sentinel; the worker, the store's.
	if err := <-lateErr; !errors.Is(err, dockettype.ErrLeaseLost) || !errors.Is(err, store.ErrStaleLease) {
		t.Fatalf("evidence after cancel: %v, want dockettype.ErrLeaseLost (and store.ErrStaleLease)", err)
	}
	if n := metric(h.svc.metrics.FencingRejections, "evidence"); n != 1 {
		t.Fatalf("evidence fencing rejections = %v, want 1", n)
	}
	ev, err := h.svc.Evidence(context.Background(), alice, task.ID)
	if err != nil || len(ev) != 1 || ev[0].Kind != "before" || ev[0].Epoch != 1 || ev[0].Attempt != 1 {
		t.Fatalf("evidence = %+v %v, want only the item written under the live lease", ev, err)
	}
}

// TestServiceStartStopConcurrently starts and stops the service from many
// goroutines at once; it must neither race nor leak (goleak in TestMain).
func TestServiceStartStopConcurrently(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	var wg sync.WaitGroup
	for i := 0; i < 10; i++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			if err := h.svc.Start(context.Background()); err != nil {
				t.Error(err)
			}
		}()
		go func() {
			defer wg.Done()
			h.svc.Stop()
		}()
	}
	wg.Wait()
	h.svc.Stop()
	// Still usable after all that.
	h.start()
	task := h.submit(alice, "after", "test.echo", `1`)
	h.waitTerminal(alice, task.ID, dockettype.StateSucceeded)
}

// TestExecutionServiceDrainEndsLongPolls: a long poll answers at once, with
// the task as it is, when the service begins to drain for shutdown.
func TestExecutionServiceDrainEndsLongPolls(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(h *harness, c *Config) { c.Online.Workers = -1 })
	h.svc.signals.waiting.init()
	h.start()
	task := h.submit(alice, "k", "test.echo", `1`)
	got := make(chan *dockettype.Task, 1)
	go func() {
		task, err := h.svc.Wait(context.Background(), alice, task.ID, MaxWait)
		if err != nil {
			t.Error(err)
		}
		got <- task
	}()
	awaitValue(t, "the long poll to wait", h.svc.signals.waiting.ch, task.ID)
	h.svc.Drain()
	if task := await(t, "the long poll's answer after Drain", got); task == nil || task.State != dockettype.StateQueued {
		t.Fatalf("long poll answered %+v, want the queued task", task)
	}
}
