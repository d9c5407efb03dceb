package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/uuid"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/store/sqlite"
)

// TestExecutionServiceRestart closes the service and the store and opens
// them again: every acknowledged task, its input, idempotency binding,
// events and reservation are still there, and a task whose worker died is
// picked up once its lease expires. All of it is read through the API.
func TestExecutionServiceRestart(t *testing.T) {
	t.Parallel()
	const capacity = 10
	h := newHarness(t, func(h *harness, c *Config) {
		c.Online = PoolConfig{Workers: -1, Capacity: capacity}
		c.Offline.Workers = -1
	}).start()
	ctx := context.Background()
	type acked struct {
		task  *dockettype.Task
		key   string
		input string
	}
	var all []acked
	for i := range capacity {
		key, input := fmt.Sprint("k", i), fmt.Sprintf(`{"i":%d}`, i)
		all = append(all, acked{h.submit(alice, key, "test.echo", input), key, input})
	}
	// One task was running on a node that then died.
	claimed, err := h.store.Claim(ctx, &store.ClaimParams{Now: h.clock.Now(), Queue: store.PoolQueue(dockettype.PoolOnline), Owner: "dead", Limit: 1, LeaseTTL: h.svc.cfg.LeaseTTL})
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %v %v", claimed, err)
	}
	cancelled, err := h.svc.Cancel(ctx, alice, all[capacity-1].task.ID)
	if err != nil {
		t.Fatal(err)
	}
	h.stop()
	if err := h.store.Close(); err != nil {
		t.Fatal(err)
	}

	reopened, err := sqlite.Open(ctx, h.path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reopened.Close() })
	h2 := h.node(reopened, func(c *Config) { c.Online.Workers, c.Offline.Workers = 4, 2 })
	for _, a := range all {
		got, err := h2.svc.Get(ctx, alice, a.task.ID)
		if err != nil {
			t.Fatalf("task %s lost: %v", a.task.ID, err)
		}
		if events, err := h2.svc.Events(ctx, alice, a.task.ID); err != nil || len(events) == 0 || events[0].To != dockettype.StateQueued {
			t.Fatalf("events of %s (%s): %v %v", a.task.ID, got.State, events, err)
		}
		// The binding survived: the same request under the key replays.
		res, err := h2.svc.Submit(ctx, alice, &SubmitRequest{IdempotencyKey: a.key, Workflow: "test.echo", Input: json.RawMessage(a.input)})
		if err != nil || !res.Replayed || res.Task.ID != a.task.ID {
			t.Fatalf("replay of %s after restart: %+v %v, want task %s", a.key, res, err, a.task.ID)
		}
	}
	// The reservations survived: the live tasks hold all but one slot (the
	// cancelled task's); one more submission fills the pool.
	if _, err := h2.svc.Submit(ctx, alice, &SubmitRequest{IdempotencyKey: "new", Workflow: "test.echo", Input: json.RawMessage(`"new"`)}); err != nil {
		t.Fatalf("submit into the free slot: %v", err)
	}
	if _, err := h2.svc.Submit(ctx, alice, &SubmitRequest{IdempotencyKey: "over", Workflow: "test.echo"}); errorCode(t, err) != dockettype.CodeQueueFull {
		t.Fatalf("submit past capacity after restart: %v, want queue_full", err)
	}

	tk := h2.watchTicks()
	h2.start()
	await(t, "recovery", tk.recovery)
	// The dead node's lease expires; recovery hands the task to this node.
	h.clock.Advance(h2.svc.cfg.LeaseTTL + h2.svc.cfg.RecoveryInterval)
	await(t, "recovery", tk.recovery)
	for _, a := range all[:capacity-1] {
		// test.echo returns its input: the stored input survived too.
		if got := h2.waitTerminal(alice, a.task.ID, dockettype.StateSucceeded); string(got.Result) != a.input {
			t.Fatalf("result of %s = %s, want its input %s", a.task.ID, got.Result, a.input)
		}
	}
	if got := h2.get(alice, cancelled.ID); got.State != dockettype.StateCancelled {
		t.Fatalf("cancelled task after restart: %s", got.State)
	}
}

// TestExecutionServiceFairTenantScheduling: tenant A has 100 queued
// tasks; tenant B then submits 10. With every worker busy and slots freed
// one at a time, B's tasks start within the next 20 starts (dispatch
// alternates between the two backlogged tenants), not after A's backlog.
func TestExecutionServiceFairTenantScheduling(t *testing.T) {
	t.Parallel()
	const workers = 4
	h := newHarness(t, func(h *harness, c *Config) {
		c.Online = PoolConfig{Workers: workers, Capacity: 200}
		c.ClaimBatch = workers
	})
	// Each start reports its tenant. With every worker busy, exactly one
	// task starts per freed slot, so the order of these signals is the
	// order of the claims.
	// Room for every task's start: once the test has read its window and
	// stops the service, the pool may still start the rest, and a start
	// must never block a worker that shutdown is cancelling.
	started := make(chan string, 128)
	gate := h.gate()
	h.rt.register("test.gated", dockettype.PoolOnline, func(ctx context.Context, inv *Invocation) (json.RawMessage, error) {
		select {
		case started <- inv.Task.Tenant:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		select {
		case <-gate.C:
		case <-ctx.Done():
		}
		return nil, nil
	})
	nextStart := func() string {
		t.Helper()
		return await(t, "a task to start after a freed slot", started)
	}
	ctx := context.Background()
	// Admit A's backlog in one batch (the same admission transaction Submit
	// uses, without 100 HTTP-sized round trips).
	items := make([]*store.AdmitItem, 100)
	for i := range items {
		items[i] = &store.AdmitItem{
			TaskID: uuid.Must(uuid.NewV7()).String(), Tenant: "a", Author: "a", IdempotencyKey: fmt.Sprint("a-", i),
			RequestHash: "h", Workflow: "test.gated", Pool: dockettype.PoolOnline, MaxAttempts: 1,
			DeadlineAt: baseTime.Add(h.svc.cfg.DefaultTimeout), TraceID: NewTraceID(), Input: []byte("null"),
		}
	}
	if _, err := h.store.Admit(ctx, &store.AdmitParams{Now: h.clock.Now(), Items: items}); err != nil {
		t.Fatal(err)
	}
	h.start()
	h.svc.wake(store.PoolQueue(dockettype.PoolOnline))
	for range workers {
		if got := nextStart(); got != "a" {
			t.Fatalf("a task of %q started before B submitted", got)
		}
	}
	bob := principal("b", "bob")
	for i := range 10 {
		h.submit(bob, fmt.Sprint("b-", i), "test.gated", `1`)
	}
	// Free one slot at a time and record who gets it.
	var window []string
	for range 20 {
		gate.C <- struct{}{}
		window = append(window, nextStart())
	}
	b := 0
	for _, tenant := range window {
		if tenant == "b" {
			b++
		}
	}
	if b != 10 {
		t.Fatalf("B started %d of its 10 tasks in the 20 starts after it submitted (%v), want all 10", b, window)
	}
	// Stride scheduling alternates between the two backlogged tenants:
	// neither gets two slots in a row while the other waits.
	for i := 1; i < len(window); i++ {
		if window[i] == window[i-1] {
			t.Fatalf("%s got two slots in a row at start %d while the other tenant waited: %v", window[i], i, window)
		}
	}
}
