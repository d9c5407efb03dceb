package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// keyedRun records the order a keyed workflow's tasks start in.
type keyedRun struct {
	mu    sync.Mutex
	order []string
}

func (k *keyedRun) workflow(_ context.Context, inv *Invocation) (json.RawMessage, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.order = append(k.order, string(inv.Input))
	return json.RawMessage(`{}`), nil
}

func (k *keyedRun) ran() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return fmt.Sprint(k.order)
}

func submitKeyed(h *harness, n int, key string) []*dockettype.Task {
	reqs := make([]*SubmitRequest, n)
	for i := range reqs {
		reqs[i] = &SubmitRequest{IdempotencyKey: fmt.Sprint(key, "-", i), Workflow: "test.keyed",
			Input: json.RawMessage(fmt.Sprint(i)), ConcurrencyKey: key}
	}
	// One at a time: their order is their admission order.
	tasks := make([]*dockettype.Task, n)
	for i, r := range reqs {
		res, err := h.svc.Submit(context.Background(), alice, r)
		if err != nil {
			h.t.Fatal(err)
		}
		tasks[i] = res.Task
	}
	return tasks
}

// runChainOfFour runs four tasks of one key to success and checks that
// every task after the first was started by a hand-off.
func runChainOfFour(t *testing.T, opts ...harnessOption) *keyedRun {
	h := newHarness(t, opts...)
	k := &keyedRun{}
	h.rt.register("test.keyed", dockettype.PoolOnline, k.workflow)
	tasks := submitKeyed(h, 4, "customer-1")
	h.start()
	for _, task := range tasks {
		h.waitTerminal(alice, task.ID, dockettype.StateSucceeded)
	}
	if got := testutil.ToFloat64(h.svc.metrics.HandOffs.WithLabelValues(string(dockettype.PoolOnline))); got != 3 {
		t.Errorf("hand-offs = %v, want 3 (every task after the first)", got)
	}
	return k
}

// A finish that frees a key's slot starts the key's next task on this
// node's free workers in the same transaction (store.HandOff), one at a
// after another in admission order; the fallback poll (an hour on the fake
// clock) never runs.
func TestFinishStartsTheKeysNextTaskOnThisNode(t *testing.T) {
	k := runChainOfFour(t)
	if got := k.ran(); got != "[0 1 2 3]" {
		t.Errorf("ran %v, want [0 1 2 3]", got)
	}
}

// While another tenant's ready work waits for the pool's one worker, a
// freed key slot goes through the claims, which share the worker fairly
// between the tenants, not straight to the key's next task: every claim
// finds ready work (globex's backlog), so the pool never has room for a
// hand-off, and the tenants take turns.
func TestNoHandOffWhileOtherWorkWaits(t *testing.T) {
	h := newHarness(t, func(_ *harness, c *Config) { c.Online.Workers = 1 })
	k := &keyedRun{}
	h.rt.register("test.keyed", dockettype.PoolOnline, k.workflow)
	keyed := submitKeyed(h, 3, "customer-1")
	bob := principal("globex", "bob")
	var backlog []*dockettype.Task
	for i := range 6 {
		res, err := h.svc.Submit(context.Background(), bob, &SubmitRequest{IdempotencyKey: fmt.Sprint("b-", i),
			Workflow: "test.keyed", Input: json.RawMessage(fmt.Sprint(10 + i))})
		if err != nil {
			t.Fatal(err)
		}
		backlog = append(backlog, res.Task)
	}
	h.start()
	for _, task := range keyed {
		h.waitTerminal(alice, task.ID, dockettype.StateSucceeded)
	}
	for _, task := range backlog {
		h.waitTerminal(bob, task.ID, dockettype.StateSucceeded)
	}
	if got := testutil.ToFloat64(h.svc.metrics.HandOffs.WithLabelValues(string(dockettype.PoolOnline))); got != 0 {
		t.Errorf("hand-offs = %v, want 0 (every claim found globex's backlog ready)", got)
	}
	// The key's tasks did not run back to back ahead of the backlog.
	if got := k.ran(); strings.HasPrefix(got, "[0 1 2") {
		t.Errorf("ran %v: the key's chain ran ahead of the other tenant", got)
	}
}

// Ready work that a claim did not take below its limit is held by other
// transactions, which this pool's workers could not have run: the pool
// still hands freed key slots on. (Withholding them there kept a
// three-node keyed drain going through the claims, half as fast.)
func TestHandOffWhenReadyWorkLeftIsHeldElsewhere(t *testing.T) {
	// Every claim that took fewer tasks than its limit says More, as when
	// the ready counts it read include tasks another transaction holds.
	runChainOfFour(t, withClaimHook(func(p *store.ClaimParams, claimed []*store.ClaimedTask) {
		if p.Outcome != nil && len(claimed) < p.Limit {
			p.Outcome.More = true
		}
	}))
}
