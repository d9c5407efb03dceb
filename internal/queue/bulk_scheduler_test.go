package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// withBulkClock gives the harness a fake clock and the bulk scheduler a
// period on it.
func withBulkClock(interval time.Duration) harnessOption {
	return func(h *harness, c *Config) {
		h.clock = clockwork.NewFakeClockAt(baseTime)
		c.Clock = h.clock
		c.BulkInterval = interval
	}
}

// flaky registers test.flaky, which fails while broken is set.
func (h *harness) flaky(broken *atomic.Bool) {
	h.rt.register("test.flaky", dockettype.PoolOnline, func(_ context.Context, inv *Invocation) (json.RawMessage, error) {
		if broken.Load() {
			return nil, errors.New("the upstream is down")
		}
		return inv.Input, nil
	})
}

func (h *harness) submitOnce(p dockettype.Principal, key string) *dockettype.Task {
	h.t.Helper()
	res, err := h.svc.Submit(context.Background(), p, &SubmitRequest{IdempotencyKey: key, Workflow: "test.flaky",
		Input: json.RawMessage(`{"k":"` + key + `"}`), MaxAttempts: 1})
	if err != nil {
		h.t.Fatalf("submit %s: %v", key, err)
	}
	return res.Task
}

func TestRetryFixedFailure(t *testing.T) {
	var broken atomic.Bool
	broken.Store(true)
	h := newHarness(t)
	h.flaky(&broken)
	h.start()
	task := h.submitOnce(alice, "k1")
	h.waitTerminal(alice, task.ID, dockettype.StateFailed)

	// Another tenant's member cannot see it; the task's own can retry it.
	bob := principal("globex", "bob")
	bob.KeyID = "key-bob"
	if _, err := h.svc.Retry(context.Background(), bob, task.ID); dockettype.CodeOf(err) != dockettype.CodeNotFound {
		t.Errorf("retry by another tenant: %v, want not_found", err)
	}
	broken.Store(false)
	member := alice
	member.KeyID = "key-alice"
	got, err := h.svc.Retry(context.Background(), member, task.ID)
	if err != nil {
		t.Fatalf("Retry: %v", err)
	}
	if got.ID != task.ID || got.State.Terminal() {
		t.Errorf("retried task %s is %s, want %s live again", got.ID, got.State, task.ID)
	}
	done := h.waitTerminal(alice, task.ID, dockettype.StateSucceeded)
	if string(done.Result) != `{"k":"k1"}` {
		t.Errorf("result %s, want the input as admitted", done.Result)
	}
	evs, err := h.svc.Events(context.Background(), alice, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	var retriedBy []dockettype.Actor
	for _, ev := range evs {
		if ev.Code == dockettype.CodeRetried && ev.By != nil {
			retriedBy = append(retriedBy, *ev.By)
		}
	}
	if len(retriedBy) != 1 || retriedBy[0] != (dockettype.Actor{KeyID: "key-alice", Role: dockettype.RoleMember}) {
		t.Errorf("retried events by %v, want one by key-alice (member)", retriedBy)
	}
	if _, err := h.svc.Retry(context.Background(), member, task.ID); dockettype.CodeOf(err) != dockettype.CodeNotRetryable {
		t.Errorf("retry of a succeeded task: %v, want not_retryable", err)
	}
	// A replay of its key is still this task.
	res, err := h.svc.Submit(context.Background(), alice, &SubmitRequest{IdempotencyKey: "k1", Workflow: "test.flaky",
		Input: json.RawMessage(`{"k":"k1"}`), MaxAttempts: 1})
	if err != nil || !res.Replayed || res.Task.ID != task.ID {
		t.Errorf("replay of the key: %+v, %v; want task %s", res, err, task.ID)
	}
}

func TestRetryRefusedWhenTenantFull(t *testing.T) {
	var broken atomic.Bool
	broken.Store(true)
	h := newHarness(t)
	h.flaky(&broken)
	h.start()
	failed := h.submitOnce(alice, "f")
	h.waitTerminal(alice, failed.ID, dockettype.StateFailed)
	if _, err := h.store.UpdateTenant(context.Background(), &store.UpdateTenantParams{Now: h.clock.Now(), Tenant: "acme",
		MaxInFlight: ptr(1)}); err != nil {
		t.Fatal(err)
	}
	gate := h.gate()
	h.rt.register("test.block", dockettype.PoolOnline, func(ctx context.Context, _ *Invocation) (json.RawMessage, error) {
		select {
		case <-gate.C:
		case <-ctx.Done():
		}
		return json.RawMessage(`1`), nil
	})
	h.submit(alice, "blocker", "test.block", `1`)
	_, err := h.svc.Retry(context.Background(), alice, failed.ID)
	var de *dockettype.Error
	if !errors.As(err, &de) || de.Code != dockettype.CodeTenantQuotaExceeded || de.RetryAfter <= 0 {
		t.Errorf("retry with the tenant full: %v, want tenant_quota_exceeded with a Retry-After", err)
	}
	if got := h.get(alice, failed.ID); got.State != dockettype.StateFailed {
		t.Errorf("refused retry left the task %s, want failed", got.State)
	}
	gate.open()
}

func ptr[T any](v T) *T { return &v }

func TestBulkRetryByFilter(t *testing.T) {
	var broken atomic.Bool
	broken.Store(true)
	h := newHarness(t, withBulkClock(time.Second), func(_ *harness, c *Config) { c.BulkBatch = 2 })
	h.flaky(&broken)
	ticked := &h.svc.signals.bulk.ticked
	ticked.init()
	paused := &h.svc.signals.bulk.paused
	paused.init()
	h.start()
	await(t, "bulk tick", ticked.ch) // the first, at start: no job

	var ids []string
	for i := range 5 {
		task := h.submitOnce(alice, fmt.Sprint("t", i))
		h.waitTerminal(alice, task.ID, dockettype.StateFailed)
		ids = append(ids, task.ID)
	}
	ok := h.submit(alice, "ok", "test.echo", `1`)
	h.waitTerminal(alice, ok.ID, dockettype.StateSucceeded)
	bob := principal("globex", "bob")
	other := h.submitOnce(bob, "theirs")
	h.waitTerminal(bob, other.ID, dockettype.StateFailed)
	broken.Store(false)

	if _, err := h.svc.StartBulk(context.Background(), alice, false, &BulkRequest{Action: "retry",
		Filter: store.TaskFilter{Tenant: "globex"}}); dockettype.CodeOf(err) != dockettype.CodeForbidden {
		t.Errorf("a member's bulk action on another tenant: %v, want forbidden", err)
	}
	if _, err := h.svc.StartBulk(context.Background(), alice, false, &BulkRequest{Action: "explode"}); dockettype.CodeOf(err) != dockettype.CodeInvalidRequest {
		t.Errorf("unknown action: %v, want invalid_request", err)
	}
	job, err := h.svc.StartBulk(context.Background(), alice, false, &BulkRequest{Action: "retry",
		Filter: store.TaskFilter{State: dockettype.StateFailed, Workflow: "test.flaky"}})
	if err != nil {
		t.Fatal(err)
	}
	if job.State != store.BulkRunning || job.Filter.Tenant != "acme" {
		t.Fatalf("job %+v, want running on acme", job)
	}
	if _, err := h.svc.GetBulk(context.Background(), bob, false, job.ID); dockettype.CodeOf(err) != dockettype.CodeNotFound {
		t.Errorf("another tenant's view of the job: %v, want not_found", err)
	}
	// Three batches of two, a pause between two.
	h.clock.Advance(time.Second)
	for range 2 {
		await(t, "bulk pause", paused.ch)
		h.clock.Advance(h.svc.cfg.BulkPause)
	}
	await(t, "bulk tick", ticked.ch)
	got, err := h.svc.GetBulk(context.Background(), alice, false, job.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != store.BulkDone || got.Matched != 5 || got.Done != 5 || got.Skipped != 0 || got.Failed != 0 || got.FinishedAt == nil {
		t.Errorf("finished job %+v, want done with 5 matched and retried", got)
	}
	for _, id := range ids {
		h.waitTerminal(alice, id, dockettype.StateSucceeded)
	}
	if task := h.get(bob, other.ID); task.State != dockettype.StateFailed {
		t.Errorf("another tenant's task is %s, want failed (not matched)", task.State)
	}
	if c, err := h.svc.CancelBulk(context.Background(), alice, false, job.ID); err != nil || c.State != store.BulkDone {
		t.Errorf("cancel of a done job: %+v, %v; want it unchanged", c, err)
	}
}

func TestBulkCancelStopsJob(t *testing.T) {
	h := newHarness(t, withBulkClock(time.Second), func(_ *harness, c *Config) { c.BulkBatch = 1 })
	ticked := &h.svc.signals.bulk.ticked
	ticked.init()
	paused := &h.svc.signals.bulk.paused
	paused.init()
	gate := h.gate()
	h.rt.register("test.block", dockettype.PoolOffline, func(ctx context.Context, _ *Invocation) (json.RawMessage, error) {
		select {
		case <-gate.C:
		case <-ctx.Done():
		}
		return json.RawMessage(`1`), ctx.Err()
	})
	h.start()
	await(t, "bulk tick", ticked.ch)
	var ids []string
	for i := range 3 {
		ids = append(ids, h.submit(alice, fmt.Sprint("b", i), "test.block", `1`).ID)
	}
	admin := dockettype.Principal{Tenant: "ops", Name: "root", Role: dockettype.RoleAdmin, KeyID: "key-root"}
	job, err := h.svc.StartBulk(context.Background(), admin, true, &BulkRequest{Action: "cancel",
		Filter: store.TaskFilter{Tenant: "acme", Workflow: "test.block"}})
	if err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(time.Second)
	await(t, "bulk pause", paused.ch) // one task cancelled
	if c, err := h.svc.CancelBulk(context.Background(), admin, true, job.ID); err != nil || c.State != store.BulkCancelled {
		t.Fatalf("CancelBulk: %+v, %v; want cancelled", c, err)
	}
	h.clock.Advance(h.svc.cfg.BulkPause)
	await(t, "bulk tick", ticked.ch)
	got, err := h.svc.GetBulk(context.Background(), admin, true, job.ID)
	if err != nil {
		t.Fatal(err)
	}
	// No batch runs after the cancel.
	if got.State != store.BulkCancelled || got.Done != 1 || got.Matched != 1 {
		t.Errorf("cancelled job %+v, want cancelled after 1 task", got)
	}
	cancelled := 0
	for _, id := range ids {
		if h.get(alice, id).State == dockettype.StateCancelled {
			cancelled++
		}
	}
	if cancelled != got.Done {
		t.Errorf("%d tasks cancelled, job says %d", cancelled, got.Done)
	}
	gate.open()
}

// A bulk cancel's batch is one store call; each task it cancelled is then
// treated as a single cancel treats it: a running one's worker stopped,
// counted as done; a terminal one skipped.
func TestBulkCancelStopsRunningAndQueued(t *testing.T) {
	h := newHarness(t, withBulkClock(time.Second))
	ticked := &h.svc.signals.bulk.ticked
	ticked.init()
	gate := h.gate()
	started, stopped := make(chan struct{}, 4), make(chan struct{}, 4)
	h.rt.register("test.block", dockettype.PoolOffline, func(ctx context.Context, _ *Invocation) (json.RawMessage, error) {
		started <- struct{}{}
		select {
		case <-gate.C:
			return json.RawMessage(`1`), nil
		case <-ctx.Done():
			stopped <- struct{}{}
			return nil, ctx.Err()
		}
	})
	h.start()
	await(t, "bulk tick", ticked.ch)
	ok := h.submit(alice, "ok", "test.echo", `1`)
	h.waitTerminal(alice, ok.ID, dockettype.StateSucceeded)
	var ids []string
	for i := range 4 {
		ids = append(ids, h.submit(alice, fmt.Sprint("b", i), "test.block", `1`).ID)
	}
	// The offline pool's two workers hold two; two stay queued.
	await(t, "task start", started)
	await(t, "task start", started)

	job, err := h.svc.StartBulk(context.Background(), alice, false, &BulkRequest{Action: "cancel"})
	if err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(time.Second)
	await(t, "bulk tick", ticked.ch) // one batch: fewer tasks than a batch holds
	got, err := h.svc.GetBulk(context.Background(), alice, false, job.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != store.BulkDone || got.Matched != 5 || got.Done != 4 || got.Skipped != 1 || got.Failed != 0 {
		t.Errorf("job %+v, want done: 5 matched, 4 cancelled, the succeeded one skipped", got)
	}
	for _, id := range ids {
		h.waitTerminal(alice, id, dockettype.StateCancelled)
	}
	// The two running ones were stopped by the cancel, on this node.
	await(t, "worker stop", stopped)
	await(t, "worker stop", stopped)
	if n := len(started); n != 0 {
		t.Errorf("%d cancelled tasks started after the cancel", n)
	}
}

// A bulk job yields to submissions: while the node admitted one in the
// last second its batches are BulkBusyBatch tasks, otherwise BulkBatch.
func TestBulkYieldsToSubmissions(t *testing.T) {
	var broken atomic.Bool
	broken.Store(true)
	h := newHarness(t, withBulkClock(time.Minute), func(_ *harness, c *Config) {
		c.BulkBatch, c.BulkBusyBatch, c.BulkBatches = 4, 2, 1
	})
	h.flaky(&broken)
	ticked := &h.svc.signals.bulk.ticked
	ticked.init()
	h.start()
	await(t, "bulk tick", ticked.ch) // the first, at start: no job
	for i := range 9 {
		task := h.submitOnce(alice, fmt.Sprint("t", i))
		h.waitTerminal(alice, task.ID, dockettype.StateFailed)
	}
	broken.Store(false)
	job, err := h.svc.StartBulk(context.Background(), alice, false, &BulkRequest{Action: "retry",
		Filter: store.TaskFilter{State: dockettype.StateFailed, Workflow: "test.flaky"}})
	if err != nil {
		t.Fatal(err)
	}
	matched := func() int {
		t.Helper()
		got, err := h.svc.GetBulk(context.Background(), alice, false, job.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got.Matched
	}
	// A minute after the last submission: a whole batch.
	h.clock.Advance(time.Minute)
	await(t, "bulk tick", ticked.ch)
	if got := matched(); got != 4 {
		t.Fatalf("matched %d after an idle tick, want a batch of 4", got)
	}
	// A submission half a second before the tick: a busy batch.
	h.clock.Advance(time.Minute - busyWindow/2)
	h.submit(alice, "foreground", "test.echo", `1`)
	h.clock.Advance(busyWindow / 2)
	await(t, "bulk tick", ticked.ch)
	if got := matched(); got != 6 {
		t.Fatalf("matched %d after a tick %v after a submission, want 4 + a busy batch of 2", got, busyWindow/2)
	}
	// Idle again.
	h.clock.Advance(time.Minute)
	await(t, "bulk tick", ticked.ch)
	if got := matched(); got != 9 {
		t.Errorf("matched %d after an idle tick, want all 9", got)
	}
}
