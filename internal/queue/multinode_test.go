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
	node := func(name string, offlineWorkers int) (*Service, *ticks) {
		logger, _ := logtest.New(t)
		st := pgtest.Open(t, url, schema)
		svc, err := New(st, rt, Config{
			NodeID: name, Clock: clock, Logger: logger, PollInterval: 20 * time.Millisecond,
			Online: PoolConfig{Workers: 8}, Offline: PoolConfig{Workers: offlineWorkers},
			ShutdownGrace: time.Millisecond, noJitter: true,
		})
		if err != nil {
			t.Fatal(err)
		}
		h := &harness{t: t, svc: svc, clock: clock}
		h.gates = append(h.gates, release)
		tk := h.watchTicks()
		h.start()
		return svc, tk
	}
	a, _ := node("node-a", -1) // node A runs no offline work
	b, tkB := node("node-b", 2)
	ctx := context.Background()

	// One key, 32 submits on each node at once: one task.
	var wg sync.WaitGroup
	ids := make(chan string, 64)
	for i := 0; i < 64; i++ {
		svc := a
		if i%2 == 1 {
			svc = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := svc.Submit(ctx, alice, &SubmitRequest{IdempotencyKey: "shared", Workflow: "test.count", Input: json.RawMessage(`1`)})
			if err != nil {
				t.Error(err)
				return
			}
			ids <- res.Task.ID
		}()
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

	// Work submitted on both nodes runs exactly once.
	var all []string
	for i := 0; i < 100; i++ {
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
	// (Polled with Get: a long poll on node A for a task node B finishes is
	// woken by A's periodic re-read, which runs on this test's fake clock.)
	for _, id := range append(all, first) {
		eventually(t, "task "+id+" to succeed", func() bool {
			task, err := a.Get(ctx, alice, id)
			if err != nil || task.State.Terminal() && task.State != dockettype.StateSucceeded {
				t.Fatalf("task %s: %+v %v", id, task, err)
			}
			return task.State == dockettype.StateSucceeded
		})
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
	// Node B learns of it by its poll (no cross-node wake-up).
	var startedID string
	eventually(t, "node B to poll and start the task", func() bool {
		select {
		case startedID = <-started:
			return true
		default:
			clock.Advance(b.cfg.PollInterval)
			return false
		}
	})
	if startedID != res.Task.ID {
		t.Fatalf("started %s, want %s", startedID, res.Task.ID)
	}
	if task, err := a.Cancel(ctx, alice, res.Task.ID); err != nil || task.State != dockettype.StateCancelled {
		t.Fatalf("cancel on node A: %+v %v", task, err)
	}
	clock.Advance(b.cfg.HeartbeatInterval)
	await(t, "node B heartbeat", tkB.heartbeat)
	eventually(t, "node B's worker to be stopped by its refused heartbeat", func() bool {
		return metric(b.metrics.FencingRejections, "heartbeat") == 1
	})
	release.open()
	eventually(t, "node B's late result to be fenced", func() bool {
		return metric(b.metrics.FencingRejections, "finish") == 1
	})
	if events := assertOneTerminalEvent(t, a, alice, res.Task.ID); events[len(events)-1].To != dockettype.StateCancelled {
		t.Fatalf("history %+v: want the terminal event to be the cancel", events)
	}
}
