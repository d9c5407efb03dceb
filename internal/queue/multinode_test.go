package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/logtest"
	"github.com/docket-dev/docket/internal/store/postgres/pgtest"
)

// TestExecutionServiceTwoNodesOnPostgres runs two nodes (each its own
// Service and store connections) on one PostgreSQL database: idempotent
// submits racing on both nodes make one task; work submitted on either node
// runs exactly once; a cancel on node A stops a worker on node B at its
// next heartbeat, and B's late result is fenced.
func TestExecutionServiceTwoNodesOnPostgres(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	schema := pgtest.Schema(t, url)
	clock := clockwork.NewFakeClockAt(baseTime)
	rt := newTestRuntime()
	var (
		mu   sync.Mutex
		runs = map[string]int{} // task → attempts started
	)
	started := make(chan string, 1)
	release := &gate{C: make(chan struct{})} // opened by either node's harness when it stops
	rt.register("test.count", dockettype.PoolOnline, func(ctx context.Context, inv *Invocation) (json.RawMessage, error) {
		mu.Lock()
		runs[inv.Task.ID]++
		mu.Unlock()
		return inv.Input, nil
	})
	rt.register("test.hold", dockettype.PoolOffline, func(ctx context.Context, inv *Invocation) (json.RawMessage, error) {
		started <- inv.Task.ID
		<-ctx.Done()
		<-release.C
		return json.RawMessage(`"late"`), nil
	})
	node := func(name string, offlineWorkers int) *harness {
		logger, _ := logtest.New(t)
		st := pgtest.Open(t, url, schema)
		svc := newTestService(t, st, rt, Config{
			NodeID: name, Clock: clock, Logger: logger, PollInterval: 20 * time.Millisecond,
			Online: PoolConfig{Workers: 8}, Offline: PoolConfig{Workers: offlineWorkers},
			ShutdownGrace: time.Millisecond, noJitter: true,
		})
		h := &harness{t: t, svc: svc, clock: clock}
		h.gates = append(h.gates, release)
		return h
	}
	ha := node("node-a", -1) // node A runs no offline work
	hb := node("node-b", 2)
	tkB := hb.watchTicks()
	outcomesB := hb.watchOutcomes()
	hb.svc.signals.idle.init()
	ha.start()
	hb.start()
	a, b := ha.svc, hb.svc
	ctx := context.Background()

	// One key, 32 submits on each node at once: one task.
	var wg sync.WaitGroup
	ids := make(chan string, 64)
	for i := 0; i < 64; i++ {
		svc := a
		if i%2 == 1 {
			svc = b
		}
		wg.Go(func() {
			res, err := svc.Submit(ctx, alice, &SubmitRequest{IdempotencyKey: "shared", Workflow: "test.count", Input: json.RawMessage(`1`)})
			if err != nil {
				t.Error(err)
				return
			}
			ids <- res.Task.ID
		})
	}
	wg.Wait()
	close(ids)
	first := ""
	for id := range ids {
		if first == "" {
			first = id
		}
		if id != first {
			t.Fatalf("two task IDs for one key across nodes: %s, %s", first, id)
		}
	}

	// Work submitted on both nodes runs exactly once. Either node may run a
	// task (a submission wakes its own node; the other sees the work at its
	// poll), so each task is long-polled on both nodes and the node that
	// finished it answers.
	var all []string
	for i := 0; i < 40; i++ {
		svc := a
		if i%2 == 1 {
			svc = b
		}
		res, err := svc.Submit(ctx, alice, &SubmitRequest{IdempotencyKey: fmt.Sprint("k", i), Workflow: "test.count", Input: json.RawMessage(`1`)})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, res.Task.ID)
	}
	for _, id := range append(all, first) {
		if task := waitTerminalOnEither(t, []*Service{a, b}, alice, id); task.State != dockettype.StateSucceeded {
			t.Fatalf("task %s ended %s (%+v)", id, task.State, task.Error)
		}
	}
	mu.Lock()
	for _, id := range append(all, first) {
		if runs[id] != 1 {
			t.Errorf("task %s ran %d times, want once", id, runs[id])
		}
	}
	mu.Unlock()

	// A cancel on node A reaches the worker on node B through B's heartbeat.
	res, err := a.Submit(ctx, alice, &SubmitRequest{IdempotencyKey: "held", Workflow: "test.hold"})
	if err != nil {
		t.Fatal(err)
	}
	// Node B learns of it by its poll (no cross-node wake-up): each time
	// B's offline claim loop is idle, with its poll timer armed, the clock
	// moves one poll interval.
	var startedID string
	for startedID == "" {
		select {
		case startedID = <-started:
		case p := <-hb.svc.signals.idle.ch:
			if p == dockettype.PoolOffline {
				clock.Advance(b.cfg.PollInterval)
			}
		case <-time.After(signalTimeout):
			t.Fatal("node B did not start the task")
		}
	}
	if startedID != res.Task.ID {
		t.Fatalf("started %s, want %s", startedID, res.Task.ID)
	}
	if task, err := a.Cancel(ctx, alice, res.Task.ID); err != nil || task.State != dockettype.StateCancelled {
		t.Fatalf("cancel on node A: %+v %v", task, err)
	}
	drainSignals(tkB.heartbeat)
	clock.Advance(b.cfg.HeartbeatInterval)
	await(t, "node B heartbeat", tkB.heartbeat)
	if n := metric(b.metrics.FencingRejections, "heartbeat"); n != 1 {
		t.Fatalf("node B heartbeat fencing rejections = %v, want 1 (its worker stopped by the refused heartbeat)", n)
	}
	release.open()
	awaitOutcome(t, outcomesB, res.Task.ID, outcomeFenced)
	if n := metric(b.metrics.FencingRejections, "finish"); n != 1 {
		t.Fatalf("node B finish fencing rejections = %v, want 1", n)
	}
	if events := assertOneTerminalEvent(t, a, alice, res.Task.ID); events[len(events)-1].To != dockettype.StateCancelled {
		t.Fatalf("history %+v: want the terminal event to be the cancel", events)
	}
}

// waitTerminalOnEither long-polls the task on every node at once and
// returns the first terminal answer: the node that finishes a task wakes
// its own long polls.
func waitTerminalOnEither(t *testing.T, nodes []*Service, p dockettype.Principal, id string) *dockettype.Task {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), signalTimeout)
	defer cancel()
	got := make(chan *dockettype.Task, len(nodes))
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for _, svc := range nodes {
		wg.Go(func() {
			for ctx.Err() == nil {
				task, err := svc.Wait(ctx, p, id, MaxWait)
				if err != nil {
					return
				}
				if task.State.Terminal() {
					got <- task
					return
				}
			}
		})
	}
	select {
	case task := <-got:
		return task
	case <-ctx.Done():
		t.Fatalf("task %s not terminal on any node within %s", id, signalTimeout)
		return nil
	}
}
