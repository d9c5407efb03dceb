package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/docket-dev/docket"
	"github.com/docket-dev/docket/client"
	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/logtest"
	"github.com/docket-dev/docket/worker"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// env is a real server (SQLite, in process, a real listener) with an admin
// key, the remote workflows a test registers and a worker key.
type env struct {
	t      testing.TB
	db     string // the server's database: a SQLite path or a postgres:// URL
	srv    *docket.Server
	admin  *client.Client
	worker string // a worker key of tenant demo
}

func newEnv(t testing.TB, cfg docket.Config) *env {
	t.Helper()
	cfg.DB = filepath.Join(t.TempDir(), "docket.db")
	return newEnvOn(t, cfg)
}

// newEnvOn is newEnv on cfg.DB.
func newEnvOn(t testing.TB, cfg docket.Config) *env {
	t.Helper()
	logger, _ := logtest.New(t)
	cfg.Listen, cfg.Logger = "127.0.0.1:0", logger
	srv, err := docket.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	key, err := srv.Bootstrap(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop() })
	e := &env{t: t, db: cfg.DB, srv: srv, admin: client.New(srv.URL(), key)}
	e.worker = e.key("demo", "fleet", false)
	return e
}

// key makes a worker key.
func (e *env) key(tenant, principal string, all bool) string {
	e.t.Helper()
	var k struct{ Key string }
	if err := e.admin.Call(context.Background(), "POST", "/v1/admin/keys",
		map[string]any{"tenant": tenant, "principal": principal, "role": "worker", "all_tenants": all}, &k); err != nil {
		e.t.Fatal(err)
	}
	return k.Key
}

func (e *env) register(name string, maxAttempts int) {
	e.t.Helper()
	if err := e.admin.Call(context.Background(), "PUT", "/v1/admin/workflows/"+name,
		map[string]any{"pool": "online", "max_attempts": maxAttempts}, nil); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) submit(c *client.Client, key, workflow, input string, timeoutMS int64) *dockettype.Task {
	e.t.Helper()
	res, err := c.Submit(context.Background(), &client.SubmitParams{IdempotencyKey: key, Workflow: workflow,
		Input: json.RawMessage(input), TimeoutMS: timeoutMS})
	if err != nil {
		e.t.Fatal(err)
	}
	return res.Task
}

func (e *env) wait(id string) *dockettype.Task {
	e.t.Helper()
	task, err := e.admin.Wait(context.Background(), id, 30*time.Second)
	if err != nil {
		e.t.Fatal(err)
	}
	return task
}

// run runs w until the test ends (or stop is called) and reports Run's
// error.
func run(t testing.TB, w *worker.Worker) (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	var stopped atomic.Bool
	stop = func() error {
		if stopped.Swap(true) {
			return nil
		}
		cancel()
		return <-done
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

// await receives from ch, failing the test after 30 s.
func await[T any](t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatalf("no %s within 30s", what)
		panic("unreachable")
	}
}

func TestSucceedsWithResultAndEvidence(t *testing.T) {
	t.Parallel()
	e := newEnv(t, docket.Config{})
	e.register("images.resize", 0)
	w := worker.New(e.srv.URL(), e.worker, worker.Options{Slots: 4, Wait: time.Second})
	w.Handle("images.resize", func(ctx context.Context, task *worker.Task) (any, error) {
		var in struct{ N int }
		if err := json.Unmarshal(task.Input, &in); err != nil {
			return nil, worker.Fail("invalid_input", "input needs n", false)
		}
		if err := task.Evidence(ctx, "size", map[string]int{"n": in.N}); err != nil {
			return nil, err
		}
		return map[string]any{"doubled": in.N * 2, "tenant": task.Tenant, "attempt": task.Attempt}, nil
	})
	run(t, w)
	task := e.submit(e.admin, "r1", "images.resize", `{"n": 21}`, 0)
	got := e.wait(task.ID)
	if got.State != dockettype.StateSucceeded || string(got.Result) != `{"attempt":1,"doubled":42,"tenant":"demo"}` {
		t.Fatalf("task %s %s, want succeeded with the handler's result", got.State, got.Result)
	}
	ev, err := e.admin.Evidence(context.Background(), task.ID)
	if err != nil || len(ev) != 1 || ev[0].Kind != "size" || string(ev[0].Body) != `{"n":21}` {
		t.Fatalf("evidence %+v, %v; want the one item the handler wrote", ev, err)
	}
}

func TestFailures(t *testing.T) {
	t.Parallel()
	e := newEnv(t, docket.Config{})
	e.register("jobs.flaky", 3)
	e.register("jobs.bad", 3)
	var calls atomic.Int32
	w := worker.New(e.srv.URL(), e.worker, worker.Options{Wait: time.Second})
	w.Handle("jobs.flaky", func(ctx context.Context, task *worker.Task) (any, error) {
		calls.Add(1)
		if task.Attempt == 1 {
			return nil, worker.Fail("upstream_down", "try again", true)
		}
		return "second time lucky", nil
	})
	w.Handle("jobs.bad", func(ctx context.Context, task *worker.Task) (any, error) {
		return nil, worker.Fail("bad_image", "not a PNG", false)
	})
	run(t, w)
	bad := e.wait(e.submit(e.admin, "b1", "jobs.bad", `1`, 0).ID)
	if bad.State != dockettype.StateFailed || bad.Error == nil || bad.Error.Code != "bad_image" ||
		bad.Error.Message != "not a PNG" || bad.Attempt != 1 {
		t.Errorf("non-retryable failure: %s attempt %d %+v, want failed once with bad_image: not a PNG", bad.State, bad.Attempt, bad.Error)
	}
	// The retry waits its backoff (1 s by default).
	flaky := e.wait(e.submit(e.admin, "f1", "jobs.flaky", `1`, 0).ID)
	if flaky.State != dockettype.StateSucceeded || flaky.Attempt != 2 || string(flaky.Result) != `"second time lucky"` {
		t.Errorf("retryable failure: %s attempt %d %s, want succeeded on attempt 2", flaky.State, flaky.Attempt, flaky.Result)
	}
}

func TestCancelAndTimeoutReachTheHandler(t *testing.T) {
	t.Parallel()
	e := newEnv(t, docket.Config{DeadlineInterval: 100 * time.Millisecond})
	e.register("jobs.long", 1)
	started := make(chan string, 2)
	causes := make(chan error, 2)
	w := worker.New(e.srv.URL(), e.worker, worker.Options{Wait: time.Second})
	w.Handle("jobs.long", func(ctx context.Context, task *worker.Task) (any, error) {
		started <- task.ID
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return "too late", nil // dropped: never written
	})
	run(t, w)

	task := e.submit(e.admin, "c1", "jobs.long", `1`, 0)
	await(t, "start", started)
	at := time.Now()
	if _, err := e.admin.Cancel(context.Background(), task.ID); err != nil {
		t.Fatal(err)
	}
	if cause := await(t, "cancellation", causes); !errors.Is(cause, worker.ErrCancelled) {
		t.Errorf("cause after a cancel = %v, want ErrCancelled", cause)
	}
	t.Logf("cancel reached the handler in %s", time.Since(at))
	if got := e.wait(task.ID); got.State != dockettype.StateCancelled || string(got.Result) == `"too late"` {
		t.Errorf("cancelled task is %s with result %s, want cancelled, the late result dropped", got.State, got.Result)
	}

	// Long enough to be claimed on a loaded machine, short for a test.
	timed := e.submit(e.admin, "t1", "jobs.long", `1`, 1500)
	await(t, "start", started)
	if cause := await(t, "the deadline", causes); !errors.Is(cause, worker.ErrTimedOut) {
		t.Errorf("cause after the deadline = %v, want ErrTimedOut", cause)
	}
	if got := e.wait(timed.ID); got.State != dockettype.StateTimedOut || got.Error == nil || got.Error.Code != dockettype.CodeDeadlineExceeded {
		t.Errorf("task past its deadline is %s %+v, want timed_out deadline_exceeded", got.State, got.Error)
	}
}

// Stopping the worker hands a running task back: queued again with a
// shutdown event, its attempt not charged, and another worker runs it.
func TestShutdownReleasesLeases(t *testing.T) {
	t.Parallel()
	e := newEnv(t, docket.Config{})
	e.register("jobs.slow", 1)
	started := make(chan struct{}, 1)
	first := worker.New(e.srv.URL(), e.worker, worker.Options{Wait: time.Second, ShutdownGrace: 100 * time.Millisecond})
	first.Handle("jobs.slow", func(ctx context.Context, task *worker.Task) (any, error) {
		started <- struct{}{}
		<-ctx.Done()
		return nil, context.Cause(ctx)
	})
	stop := run(t, first)
	task := e.submit(e.admin, "s1", "jobs.slow", `1`, 0)
	await(t, "start", started)
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	got, err := e.admin.Get(context.Background(), task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != dockettype.StateQueued || got.Attempt != 0 {
		t.Fatalf("after the worker stopped the task is %s attempt %d, want queued, attempt not charged", got.State, got.Attempt)
	}
	events, err := e.admin.Events(context.Background(), task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if last := events[len(events)-1]; last.From != dockettype.StateRunning || last.To != dockettype.StateQueued || last.Code != dockettype.CodeShutdown {
		t.Fatalf("last event %+v, want running → queued with code shutdown", last)
	}
	second := worker.New(e.srv.URL(), e.worker, worker.Options{Wait: time.Second})
	second.Handle("jobs.slow", func(ctx context.Context, task *worker.Task) (any, error) { return task.Attempt, nil })
	run(t, second)
	if got := e.wait(task.ID); got.State != dockettype.StateSucceeded || string(got.Result) != "1" {
		t.Fatalf("the second worker's run: %s %s, want succeeded as attempt 1 of 1", got.State, got.Result)
	}
}

// A worker that dies (claims, then never heartbeats) loses its lease after
// the TTL; recovery queues the task again and a live worker finishes it.
// The dead worker's late finish is fenced.
func TestLostWorkerIsRecoveredAndFenced(t *testing.T) {
	t.Parallel()
	e := newEnv(t, docket.Config{LeaseTTL: time.Second, HeartbeatInterval: 300 * time.Millisecond, RecoveryInterval: 100 * time.Millisecond})
	e.register("jobs.once", 3)
	task := e.submit(e.admin, "d1", "jobs.once", `1`, 0)
	dead := client.New(e.srv.URL(), e.worker)
	var claimed struct {
		Tasks []struct{ Lease string }
	}
	if err := dead.Call(context.Background(), "POST", "/v1/worker/claim", map[string]any{"workflows": []string{"jobs.once"}}, &claimed); err != nil || len(claimed.Tasks) != 1 {
		t.Fatalf("claim: %+v, %v", claimed, err)
	}
	live := worker.New(e.srv.URL(), e.worker, worker.Options{Wait: time.Second})
	live.Handle("jobs.once", func(ctx context.Context, task *worker.Task) (any, error) { return task.Attempt, nil })
	run(t, live)
	if got := e.wait(task.ID); got.State != dockettype.StateSucceeded || string(got.Result) != "2" {
		t.Fatalf("recovered task: %s %s, want succeeded by the live worker as attempt 2", got.State, got.Result)
	}
	var ans struct {
		Items []struct{ Status string }
	}
	late := map[string]any{"items": []map[string]any{{"lease": claimed.Tasks[0].Lease, "outcome": "succeeded", "result": "late"}}}
	if err := dead.Call(context.Background(), "POST", "/v1/worker/finish", late, &ans); err != nil || len(ans.Items) != 1 || ans.Items[0].Status != "lease_lost" {
		t.Fatalf("the dead worker's late finish: %+v, %v; want lease_lost", ans, err)
	}
	if got := e.wait(task.ID); string(got.Result) != "2" {
		t.Fatalf("after the late finish the result is %s, want the live worker's", got.Result)
	}
}

// A worker key of one tenant claims only that tenant's tasks; an
// all-tenants key claims every tenant's; a token is refused when another
// key presents it.
func TestTenantScopeAndForeignTokens(t *testing.T) {
	t.Parallel()
	e := newEnv(t, docket.Config{})
	e.register("jobs.scoped", 1)
	var member struct{ Key string }
	if err := e.admin.Call(context.Background(), "POST", "/v1/admin/keys", map[string]any{"tenant": "acme", "principal": "p"}, &member); err != nil {
		t.Fatal(err)
	}
	acme := client.New(e.srv.URL(), member.Key)
	demoTask := e.submit(e.admin, "k1", "jobs.scoped", `1`, 0)
	acmeTask := e.submit(acme, "k1", "jobs.scoped", `1`, 0)

	claim := func(key string) []string {
		var ans struct {
			Tasks []struct {
				Lease string
				Task  struct{ ID string }
			}
		}
		if err := client.New(e.srv.URL(), key).Call(context.Background(), "POST", "/v1/worker/claim",
			map[string]any{"workflows": []string{"jobs.scoped"}, "max": 10}, &ans); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, c := range ans.Tasks {
			out = append(out, c.Task.ID+" "+c.Lease)
		}
		return out
	}
	got := claim(e.key("acme", "acme-fleet", false))
	if len(got) != 1 || got[0][:len(acmeTask.ID)] != acmeTask.ID {
		t.Fatalf("acme's worker key claimed %v, want only acme's task %s", got, acmeTask.ID)
	}
	acmeLease := got[0][len(acmeTask.ID)+1:]
	all := claim(e.key("ops", "ops-fleet", true))
	if len(all) != 1 || all[0][:len(demoTask.ID)] != demoTask.ID {
		t.Fatalf("the all-tenants key claimed %v, want demo's task %s (acme's is taken)", all, demoTask.ID)
	}
	// demo's worker key presents acme's token: refused, the task untouched.
	var ans struct {
		Leases []struct{ Status string }
	}
	if err := client.New(e.srv.URL(), e.worker).Call(context.Background(), "POST", "/v1/worker/heartbeat",
		map[string]any{"leases": []string{acmeLease}}, &ans); err != nil || len(ans.Leases) != 1 || ans.Leases[0].Status != "lease_lost" {
		t.Fatalf("a foreign key's heartbeat of acme's lease: %+v, %v; want lease_lost", ans, err)
	}
	var fin struct {
		Items []struct{ Status string }
	}
	if err := client.New(e.srv.URL(), e.worker).Call(context.Background(), "POST", "/v1/worker/finish",
		map[string]any{"items": []map[string]any{{"lease": acmeLease, "outcome": "succeeded", "result": 1}}}, &fin); err != nil ||
		len(fin.Items) != 1 || fin.Items[0].Status != "lease_lost" {
		t.Fatalf("a foreign key's finish of acme's lease: %+v, %v; want lease_lost", fin, err)
	}
	if task, err := acme.Get(context.Background(), acmeTask.ID); err != nil || task.State != dockettype.StateRunning {
		t.Fatalf("acme's task after the foreign writes: %+v, %v; want still running", task, err)
	}
}

// Many fast tasks through a few slots: every one succeeds exactly once.
func TestBurnDown(t *testing.T) {
	t.Parallel()
	e := newEnv(t, docket.Config{})
	e.register("jobs.noop", 1)
	const n = 300
	reqs := make([]*client.SubmitParams, n)
	for i := range reqs {
		reqs[i] = &client.SubmitParams{IdempotencyKey: fmt.Sprint("n", i), Workflow: "jobs.noop", Input: json.RawMessage(`1`)}
	}
	res, err := e.admin.SubmitBatch(context.Background(), &client.SubmitBatchParams{Tasks: reqs})
	if err != nil {
		t.Fatal(err)
	}
	var ran atomic.Int32
	w := worker.New(e.srv.URL(), e.worker, worker.Options{Slots: 16, Wait: time.Second})
	w.Handle("jobs.noop", func(ctx context.Context, task *worker.Task) (any, error) {
		ran.Add(1)
		return nil, nil
	})
	run(t, w)
	for _, r := range res {
		if got := e.wait(r.Task.ID); got.State != dockettype.StateSucceeded || got.Attempt != 1 {
			t.Fatalf("task %s: %s attempt %d", r.Task.ID, got.State, got.Attempt)
		}
	}
	if ran.Load() != n {
		t.Fatalf("the handler ran %d times for %d tasks", ran.Load(), n)
	}
}

// A remote handler reads the results of the tasks its task depends on
// (fan-in), which ran first.
func TestDependencyResults(t *testing.T) {
	t.Parallel()
	e := newEnv(t, docket.Config{})
	e.register("reports.join", 0)
	first := e.submit(e.admin, "part-1", "demo.echo", `{"part":1}`, 0)
	second := e.submit(e.admin, "part-2", "demo.echo", `{"part":2}`, 0)
	res, err := e.admin.Submit(context.Background(), &client.SubmitParams{IdempotencyKey: "join", Workflow: "reports.join",
		DependsOn: []string{first.ID, second.ID}})
	if err != nil {
		t.Fatal(err)
	}
	w := worker.New(e.srv.URL(), e.worker, worker.Options{Slots: 1, Wait: time.Second})
	w.Handle("reports.join", func(ctx context.Context, task *worker.Task) (any, error) {
		deps, err := task.DependencyResults(ctx)
		if err != nil {
			return nil, err
		}
		var parts []json.RawMessage
		for _, d := range deps {
			if d.State != dockettype.StateSucceeded {
				return nil, worker.Fail("dependency_not_done", "a dependency has not succeeded", false)
			}
			parts = append(parts, d.Result)
		}
		if _, err := task.DependencyResult(ctx, "not-a-dependency"); !errors.Is(err, dockettype.ErrNotDependency) {
			return nil, worker.Fail("unexpected", "DependencyResult of a non-dependency did not say so", false)
		}
		return parts, nil
	})
	run(t, w)
	got := e.wait(res.Task.ID)
	if got.State != dockettype.StateSucceeded || string(got.Result) != `[{"part":1},{"part":2}]` {
		t.Fatalf("join %s %s %+v, want succeeded with both parts in order", got.State, got.Result, got.Error)
	}
}
