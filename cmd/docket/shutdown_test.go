package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/docket-dev/docket/client"
	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/logtest"
	"github.com/docket-dev/docket/internal/store/postgres/pgtest"
)

// TestSIGTERMKeepsOutcomes sends SIGTERM to the real binary while two
// tasks run: one that finishes inside the shutdown grace and one that
// would run for a minute. `serve` cancels its context on the signal before
// it stops the server, so this is the path every deploy takes. After a
// restart the short task is succeeded (its outcome was written during the
// shutdown), and the long one was handed back at once (a running → queued
// event with code shutdown, attempt not charged) and runs again as attempt
// 1 of 1, long before its lease could have lapsed.
func TestSIGTERMKeepsOutcomes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the server binary")
	}
	bin := buildDocket(t)
	t.Run("sqlite", func(t *testing.T) {
		testSIGTERM(t, bin, filepath.Join(t.TempDir(), "docket.db"))
	})
	t.Run("postgres", func(t *testing.T) {
		testSIGTERM(t, bin, pgtest.Database(t, pgtest.URL(t)))
	})
}

func testSIGTERM(t *testing.T, bin, db string) {
	addr := freeAddr(t)
	// A lease of a minute: were the long task's lease left to lapse, the
	// test would see it still running after the restart.
	flags := []string{"--shutdown-grace", "4s", "--lease-ttl", "60s", "--heartbeat-interval", "1s"}
	srv := startServer(t, bin, db, addr, true, flags...)
	c := client.New("http://"+addr, srv.key)
	ctx := context.Background()
	submit := func(key string, ms int) string {
		res, err := c.Submit(ctx, &client.SubmitParams{IdempotencyKey: key, Workflow: "demo.sleep",
			Input: json.RawMessage(fmt.Sprintf(`{"ms":%d}`, ms)), MaxAttempts: 1, TimeoutMS: 300_000})
		if err != nil {
			t.Fatal(err)
		}
		return res.Task.ID
	}
	short, long := submit("short", 1500), submit("long", 120_000)
	for _, id := range []string{short, long} {
		waitState(t, c, id, dockettype.StateRunning)
	}
	if err := srv.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := srv.cmd.Wait(); err != nil {
		t.Fatalf("serve exited with %v after SIGTERM; stderr:\n%s", err, srv.stderr.String())
	}
	logtest.Check(t, srv.stderr.String())

	srv2 := startServer(t, bin, db, addr, false, flags...)
	defer func() {
		_ = srv2.cmd.Process.Signal(syscall.SIGTERM)
		_ = srv2.cmd.Wait()
		logtest.Check(t, srv2.stderr.String())
	}()
	task, err := c.Get(ctx, short)
	if err != nil {
		t.Fatal(err)
	}
	if task.State != dockettype.StateSucceeded {
		t.Errorf("the task that finished inside the grace is %s %+v, want succeeded", task.State, task.Error)
	}
	events, err := c.Events(ctx, long)
	if err != nil {
		t.Fatal(err)
	}
	released := false
	for _, e := range events {
		if e.From == dockettype.StateRunning && e.To == dockettype.StateQueued && e.Code == dockettype.CodeShutdown {
			released = true
		}
	}
	if !released {
		t.Fatalf("the long task has no running → queued shutdown event: %+v", events)
	}
	// Handed back, not lapsed: the restarted node runs it again at once,
	// and the attempt the shutdown cut short was not charged.
	task = waitState(t, c, long, dockettype.StateRunning)
	if task.Attempt != 1 || task.MaxAttempts != 1 {
		t.Errorf("after the restart the long task runs attempt %d of %d, want 1 of 1", task.Attempt, task.MaxAttempts)
	}
	if _, err := c.Cancel(ctx, long); err != nil {
		t.Fatal(err)
	}
}

// waitState long-polls a task until it reaches want (or a terminal state).
func waitState(t *testing.T, c *client.Client, id string, want dockettype.State) *dockettype.Task {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		task, err := c.Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if task.State == want {
			return task
		}
		if task.State.Terminal() || time.Now().After(deadline) {
			t.Fatalf("task %s is %s, want %s", id, task.State, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
