package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/logtest"
	"github.com/docket-dev/docket/internal/store/postgres/pgtest"
)

// TestExecutionServiceNotifiedAcrossNodes: on PostgreSQL, work submitted on
// node A starts on node B without waiting for B's poll (B's poll timer is
// on a fake clock that never moves), and a long poll on A answers as soon
// as B finishes the task, without waiting for A's re-read.
func TestExecutionServiceNotifiedAcrossNodes(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	schema := pgtest.Schema(t, url)
	clock := clockwork.NewFakeClockAt(baseTime)
	rt := newTestRuntime()
	started := make(chan string, 64)
	finish := &gate{C: make(chan struct{})}
	rt.register("test.note", dockettype.PoolOnline, func(_ context.Context, inv *Invocation) (json.RawMessage, error) {
		started <- inv.Task.ID
		<-finish.C
		return json.RawMessage(`"done on b"`), nil
	})
	node := func(name string, workers int) *harness {
		logger, _ := logtest.New(t)
		svc := newTestService(t, pgtest.Open(t, url, schema), rt, Config{
			NodeID: name, Clock: clock, Logger: logger, PollInterval: time.Hour,
			Online: PoolConfig{Workers: workers}, Offline: PoolConfig{Workers: -1},
			ShutdownGrace: time.Millisecond, noJitter: true,
		})
		return &harness{t: t, svc: svc, clock: clock, gates: []*gate{finish}}
	}
	a := node("node-a", -1) // A runs nothing: B must be told
	b := node("node-b", 4)
	a.svc.signals.waiting.init()
	b.svc.signals.idle.init()
	a.start()
	b.start()
	await(t, "node B idle", b.svc.signals.idle.ch) // B polled once and found nothing

	// The listeners connect in the background: submit until B is woken.
	// Whichever submission B starts first proves it (B's own poll is an
	// hour away): once it listens, one wake-up may claim several of them.
	ctx := context.Background()
	submitted := map[string]*dockettype.Task{}
	var task *dockettype.Task
	deadline := time.After(signalTimeout)
	for i := 0; task == nil; i++ {
		res, err := a.svc.Submit(ctx, alice, &SubmitRequest{IdempotencyKey: fmt.Sprint("n-", i), Workflow: "test.note"})
		if err != nil {
			t.Fatal(err)
		}
		submitted[res.Task.ID] = res.Task
		select {
		case id := <-started:
			task = submitted[id]
		case <-time.After(200 * time.Millisecond):
		case <-deadline:
			t.Fatal("node B never started work submitted on node A")
		}
	}
	// A long poll on A, waiting before B finishes, answers with B's
	// result; A's own re-read is an hour away on the fake clock.
	type answer struct {
		task *dockettype.Task
		err  error
	}
	answered := make(chan answer, 1)
	go func() {
		got, err := a.svc.Wait(ctx, alice, task.ID, MaxWait)
		answered <- answer{got, err}
	}()
	awaitValue(t, "A's long poll to wait", a.svc.signals.waiting.ch, task.ID)
	finish.open()
	got := await(t, "A's long poll to answer", answered)
	if got.err != nil || got.task.State != dockettype.StateSucceeded || string(got.task.Result) != `"done on b"` {
		t.Fatalf("A's long poll = %+v, %v; want B's result", got.task, got.err)
	}
}
