package docket_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/docket-dev/docket"
	"github.com/docket-dev/docket/client"
	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/logtest"
	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/store/postgres/pgtest"
	"github.com/docket-dev/docket/internal/store/storeopen"
	"github.com/docket-dev/docket/workflow"
)

// TestRunShutdownAfterContextEnds drives Server.Run the way an embedding
// program does: cancel its context (the program got SIGTERM) and wait for
// Run to return. A task that finishes inside the grace period is
// succeeded; one still running when the grace ends is handed back
// (running → queued, code shutdown, attempt not charged). Both stores.
func TestRunShutdownAfterContextEnds(t *testing.T) {
	t.Parallel()
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		testRunShutdown(t, filepath.Join(t.TempDir(), "docket.db"))
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		testRunShutdown(t, pgtest.Database(t, pgtest.URL(t)))
	})
}

func testRunShutdown(t *testing.T, db string) {
	running := make(chan string, 2)
	finish := make(chan struct{})
	reg := workflow.NewRegistry()
	register := func(name string, run workflow.Func) {
		if err := reg.Register(name, workflow.Definition{Pool: dockettype.PoolOnline, Run: run}); err != nil {
			t.Fatal(err)
		}
	}
	register("test.short", func(ctx context.Context, b *workflow.Binding, _ json.RawMessage) (json.RawMessage, error) {
		running <- b.TaskID()
		<-finish
		return json.RawMessage(`"done"`), nil
	})
	register("test.long", func(ctx context.Context, b *workflow.Binding, _ json.RawMessage) (json.RawMessage, error) {
		running <- b.TaskID()
		<-ctx.Done()
		return nil, ctx.Err()
	})
	logger, _ := logtest.New(t)
	srv, err := docket.New(context.Background(), docket.Config{DB: db, Listen: "127.0.0.1:0", Logger: logger,
		Workflows: reg, ShutdownGrace: 2 * time.Second, LeaseTTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	key, err := srv.Bootstrap(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- srv.Run(ctx) }()
	select {
	case <-srv.Listening():
	case err := <-ran:
		t.Fatalf("Run: %v", err)
	}
	c := client.New(srv.URL(), key)
	submit := func(k, wf string) string {
		res, err := c.Submit(context.Background(), &client.SubmitParams{IdempotencyKey: k, Workflow: wf, MaxAttempts: 1})
		if err != nil {
			t.Fatal(err)
		}
		return res.Task.ID
	}
	short, long := submit("short", "test.short"), submit("long", "test.long")
	<-running
	<-running
	cancel()
	close(finish) // finishes well inside the 2 s grace
	if err := <-ran; err != nil {
		t.Fatalf("Run: %v", err)
	}

	st, err := storeopen.Open(context.Background(), db, storeopen.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	get := func(id string) *dockettype.Task {
		task, err := st.GetTask(context.Background(), &store.GetTaskParams{Tenant: "demo", TaskID: id})
		if err != nil {
			t.Fatal(err)
		}
		return task
	}
	if task := get(short); task.State != dockettype.StateSucceeded {
		t.Errorf("the task that finished in the grace period is %s, want succeeded", task.State)
	}
	if task := get(long); task.State != dockettype.StateQueued || task.Attempt != 0 {
		t.Errorf("the task cut short is %s attempt %d, want queued with the attempt not charged", task.State, task.Attempt)
	}
	events, err := st.ListEvents(context.Background(), &store.GetTaskParams{Tenant: "demo", TaskID: long})
	if err != nil {
		t.Fatal(err)
	}
	if last := events[len(events)-1]; last.From != dockettype.StateRunning || last.To != dockettype.StateQueued || last.Code != dockettype.CodeShutdown {
		t.Errorf("last event %+v, want running → queued with code shutdown", last)
	}
}
