package queue

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/logtest"
	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/store/engine"
	"github.com/docket-dev/docket/internal/store/faultstore"
	"github.com/docket-dev/docket/internal/store/sqlite"
)

var baseTime = time.Date(2026, 10, 12, 9, 0, 0, 0, time.UTC)

// testRuntime is a Runtime whose workflows are test functions.
type testRuntime struct {
	mu      sync.Mutex
	funcs   map[string]func(ctx context.Context, inv *Invocation) (json.RawMessage, error)
	pools   map[string]dockettype.Pool
	version string
}

func newTestRuntime() *testRuntime {
	rt := &testRuntime{
		funcs:   map[string]func(context.Context, *Invocation) (json.RawMessage, error){},
		pools:   map[string]dockettype.Pool{},
		version: "cfg-1",
	}
	rt.register("test.echo", dockettype.PoolOnline, func(_ context.Context, inv *Invocation) (json.RawMessage, error) {
		return inv.Input, nil
	})
	return rt
}

func (r *testRuntime) register(name string, pool dockettype.Pool, fn func(context.Context, *Invocation) (json.RawMessage, error)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.funcs[name] = fn
	r.pools[name] = pool
}

func (r *testRuntime) Resolve(_ context.Context, name string) (Resolution, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	pool, ok := r.pools[name]
	if !ok {
		return Resolution{}, dockettype.NewError(dockettype.CodeUnknownWorkflow, "not registered")
	}
	return Resolution{Pool: pool, ConfigVersion: r.version}, nil
}

func (r *testRuntime) Run(ctx context.Context, inv *Invocation) (json.RawMessage, error) {
	r.mu.Lock()
	fn := r.funcs[inv.Task.Workflow]
	r.mu.Unlock()
	return fn(ctx, inv)
}

type harness struct {
	t     *testing.T
	gates []*gate
	store *engine.Store
	st    store.Store // what the service uses (may wrap store)
	rt    *testRuntime
	clock *clockwork.FakeClock
	svc   *Service
	logs  *logtest.Buffer
	path  string
}

type harnessOption func(*harness, *Config)

// newHarness builds a Service on a fresh SQLite file with a fake clock. It
// does not start it.
func newHarness(t *testing.T, opts ...harnessOption) *harness {
	t.Helper()
	h := &harness{t: t, rt: newTestRuntime(), clock: clockwork.NewFakeClockAt(baseTime)}
	h.path = filepath.Join(t.TempDir(), "docket.db")
	var err error
	h.store, err = sqlite.Open(context.Background(), h.path, sqlite.Options{Synchronous: "normal"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.store.Close() })
	h.st = h.store
	logger, logs := logtest.New(t)
	h.logs = logs
	cfg := Config{
		NodeID:  "node-a",
		Online:  PoolConfig{Workers: 4, Capacity: 1000},
		Offline: PoolConfig{Workers: 2, Capacity: 1000},
		// Schedulers are driven by the fake clock; long intervals keep them
		// quiet unless a test advances time.
		LeaseTTL:          30 * time.Second,
		HeartbeatInterval: 10 * time.Second,
		RecoveryInterval:  5 * time.Second,
		DeadlineInterval:  time.Second,
		PollInterval:      time.Hour,
		ShutdownGrace:     time.Millisecond,
		RetryBackoffBase:  time.Second,
		Clock:             h.clock,
		Logger:            logger,
	}
	cfg.noJitter = true
	for _, o := range opts {
		o(h, &cfg)
	}
	h.svc, err = New(h.st, h.rt, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *harness) start() *harness {
	h.t.Helper()
	if err := h.svc.Start(context.Background()); err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(h.stop)
	return h
}

// gate is a channel test workflows block on. A test releases one waiter by
// sending on C, or all of them with open. The harness opens every gate
// before it stops the service, so a test that fails half-way never leaves a
// worker blocked (one that ignores its context would hang the cleanup).
type gate struct {
	C    chan struct{}
	once sync.Once
}

// gate makes a gate that the harness opens when the test ends.
func (h *harness) gate() *gate {
	g := &gate{C: make(chan struct{})}
	h.gates = append(h.gates, g)
	h.t.Cleanup(g.open) // also when the service was never started
	return g
}

func (g *gate) open() { g.once.Do(func() { close(g.C) }) }

// stop stops the service, advancing the fake clock through the shutdown
// grace period so that tasks still running are cancelled.
func (h *harness) stop() {
	for _, g := range h.gates {
		g.open()
	}
	done := make(chan struct{})
	go func() {
		h.svc.Stop()
		close(done)
	}()
	for {
		select {
		case <-done:
			return
		case <-time.After(5 * time.Millisecond):
			h.clock.Advance(h.svc.cfg.ShutdownGrace)
		}
	}
}

// withFaults makes the service use a fault-injecting wrapper of the store.
func withFaults(fs **faultstore.Store) harnessOption {
	return func(h *harness, _ *Config) {
		*fs = faultstore.New(h.store)
		h.st = *fs
	}
}

// ticks receives a signal after every tick of each scheduler.
type ticks struct {
	recovery, heartbeat, deadline chan struct{}
}

// watchTicks installs the schedulers' afterTick hooks; call before start.
func (h *harness) watchTicks() *ticks {
	tk := &ticks{make(chan struct{}, 1000), make(chan struct{}, 1000), make(chan struct{}, 1000)}
	h.svc.recovery.afterTick = func() { tk.recovery <- struct{}{} }
	h.svc.heartbeat.afterTick = func() { tk.heartbeat <- struct{}{} }
	h.svc.deadline.afterTick = func() { tk.deadline <- struct{}{} }
	return tk
}

// await waits for one tick signal.
func await(t *testing.T, what string, ch chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("no %s tick within 10s", what)
	}
}

func principal(tenant, name string) dockettype.Principal {
	return dockettype.Principal{Tenant: tenant, Name: name, Role: dockettype.RoleMember}
}

var alice = principal("acme", "alice")

func (h *harness) submit(p dockettype.Principal, key, workflow string, input string) *dockettype.Task {
	h.t.Helper()
	res, err := h.svc.Submit(context.Background(), p, &SubmitRequest{IdempotencyKey: key, Workflow: workflow, Input: json.RawMessage(input)})
	if err != nil {
		h.t.Fatalf("submit %s: %v", key, err)
	}
	return res.Task
}

func (h *harness) get(p dockettype.Principal, id string) *dockettype.Task {
	h.t.Helper()
	task, err := h.svc.Get(context.Background(), p, id)
	if err != nil {
		h.t.Fatalf("get %s: %v", id, err)
	}
	return task
}

// waitState waits (on the service's own long poll) until the task is
// terminal and checks its state.
func (h *harness) waitTerminal(p dockettype.Principal, id string, want dockettype.State) *dockettype.Task {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		task := h.get(p, id)
		if task.State.Terminal() {
			if task.State != want {
				h.t.Fatalf("task %s ended %s (error %+v), want %s", id, task.State, task.Error, want)
			}
			return task
		}
		waitFor(10 * time.Millisecond)
	}
	h.t.Fatalf("task %s not terminal within 10s (state %s)", id, h.get(p, id).State)
	return nil
}

// eventually polls cond until it holds, failing after 10s. It waits on a
// condition, not a duration: a fast machine passes at once.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		waitFor(2 * time.Millisecond)
	}
}

// waitFor yields the processor for d of real time while polling.
func waitFor(d time.Duration) { <-time.After(d) }

// metric reads one counter of a vector.
func metric(v *prometheus.CounterVec, labels ...string) float64 {
	return testutil.ToFloat64(v.WithLabelValues(labels...))
}

// usage is the in-flight count of each pool and tenant, from the store's
// Stats (what an operator sees).
type usage struct {
	Pools   map[dockettype.Pool]int
	Tenants map[string]int
}

func getUsage(ctx context.Context, st store.Statter) (*usage, error) {
	s, err := st.Stats(ctx)
	if err != nil {
		return nil, err
	}
	u := &usage{Pools: map[dockettype.Pool]int{}, Tenants: map[string]int{}}
	for _, p := range s.Pools {
		u.Pools[p.Pool] = p.InFlight
	}
	for _, t := range s.Tenants {
		u.Tenants[t.ID] = t.InFlight
	}
	return u, nil
}

// getTasks reads a tenant's tasks by ID.
func getTasks(ctx context.Context, st store.Reader, tenant string, ids []string) ([]*dockettype.Task, error) {
	tasks := make([]*dockettype.Task, 0, len(ids))
	for _, id := range ids {
		task, err := st.GetTask(ctx, &store.GetTaskParams{Tenant: tenant, TaskID: id})
		if err != nil {
			return nil, err
		}
		tasks = append(tasks, task)
	}
	return tasks, nil
}
