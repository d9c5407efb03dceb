package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/defaults"
	"github.com/docket-dev/docket/internal/logtest"
	"github.com/docket-dev/docket/internal/metrics"
	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/store/engine"
	"github.com/docket-dev/docket/internal/store/faultstore"
	"github.com/docket-dev/docket/internal/store/sqlite"
)

var baseTime = time.Date(2026, 10, 12, 9, 0, 0, 0, time.UTC)

// signalTimeout bounds every wait on a signal: a test that waits this long
// has failed (it is not a pause; a passing test never reaches it).
const signalTimeout = 30 * time.Second

// testRuntime is a Runtime whose workflows are test functions.
type testRuntime struct {
	mu      sync.Mutex
	funcs   map[string]func(ctx context.Context, inv *Invocation) (json.RawMessage, error)
	pools   map[string]dockettype.Pool
	remote  map[string]bool
	version string
}

func newTestRuntime() *testRuntime {
	rt := &testRuntime{
		funcs:   map[string]func(context.Context, *Invocation) (json.RawMessage, error){},
		pools:   map[string]dockettype.Pool{},
		remote:  map[string]bool{},
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

// registerRemote registers a workflow that remote workers run: the node's
// pools never claim its tasks (Run would find no function for it).
func (r *testRuntime) registerRemote(name string, pool dockettype.Pool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pools[name] = pool
	r.remote[name] = true
}

func (r *testRuntime) Resolve(_ context.Context, name string) (Resolution, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	pool, ok := r.pools[name]
	if !ok {
		return Resolution{}, dockettype.NewError(dockettype.CodeUnknownWorkflow, "not registered")
	}
	return Resolution{Pool: pool, ConfigVersion: r.version, Remote: r.remote[name]}, nil
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
	copyFile(t, migratedDB(t), h.path)
	var err error
	h.store, err = sqlite.Open(context.Background(), h.path, sqlite.Options{Synchronous: "normal"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.store.Close() })
	h.st = h.store
	logger, logs := logtest.New(t)
	h.logs = logs
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(h.logs.String())
		}
	})
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
		Retention:         defaults.Unlimited, // no cleaner unless a test sets a retention
		ShutdownGrace:     time.Millisecond,
		RetryBackoffBase:  time.Second,
		Clock:             h.clock,
		Logger:            logger,
	}
	cfg.noJitter = true
	for _, o := range opts {
		o(h, &cfg)
	}
	h.svc = newTestService(t, h.st, h.rt, cfg)
	return h
}

// template is an empty database migrated once per test binary: each
// harness starts from a copy, so that tests do not each pay for the
// migrations (which, under -race, cost more than most tests).
var template struct {
	once sync.Once
	path string
	err  error
}

// templateDir holds the template; TestMain removes it.
var templateDir string

func migratedDB(t *testing.T) string {
	t.Helper()
	template.once.Do(func() {
		template.path = filepath.Join(templateDir, "template.db")
		st, err := sqlite.Open(context.Background(), template.path, sqlite.Options{Synchronous: "normal"})
		if err != nil {
			template.err = err
			return
		}
		template.err = st.Close()
	})
	if template.err != nil {
		t.Fatalf("migrate the template database: %v", template.err)
	}
	return template.path
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err == nil {
		err = os.WriteFile(to, b, 0o600)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// newTestService builds a Service whose Stop the harness can drive: its
// shutdown timers signal when armed.
func newTestService(t *testing.T, st Store, rt Runtime, cfg Config) *Service {
	t.Helper()
	svc, err := New(st, rt, cfg)
	if err != nil {
		t.Fatal(err)
	}
	svc.signals.grace.init()
	svc.signals.abandon.init()
	svc.signals.flushing.init()
	return svc
}

// node is a second Service (another node) on the harness's database.
func (h *harness) node(st *engine.Store, mutate func(*Config)) *harness {
	h.t.Helper()
	cfg := h.svc.cfg
	cfg.NodeID = "node-b"
	cfg.Metrics = metrics.New()
	if mutate != nil {
		mutate(&cfg)
	}
	return &harness{t: h.t, store: st, st: st, rt: h.rt, clock: h.clock, logs: h.logs, svc: newTestService(h.t, st, h.rt, cfg)}
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

// stop stops the service. Each pool's Stop signals when it arms its grace
// timer, and stop then advances the fake clock through the grace period,
// so tasks still running are cancelled and hand their leases back. The
// abandon timer is left alone (a worker that honours its context returns
// before it matters); should a worker ignore its context, stop fails the
// test and advances that timer too.
func (h *harness) stop() {
	for _, g := range h.gates {
		g.open()
	}
	done := make(chan struct{})
	go func() {
		h.svc.Stop()
		close(done)
	}()
	bound := time.NewTimer(signalTimeout)
	defer bound.Stop()
	for {
		select {
		case <-done:
			drainSignals(h.svc.signals.grace.ch)
			drainSignals(h.svc.signals.abandon.ch)
			drainSignals(h.svc.signals.flushing.ch)
			return
		case timer := <-h.svc.signals.grace.ch:
			h.clock.Advance(timer.D)
		case d := <-h.svc.signals.flushing.ch:
			h.clock.Advance(d)
		case <-bound.C:
			h.t.Errorf("Stop did not return within %s: a worker ignores its context", signalTimeout)
			h.clock.Advance(h.svc.cfg.ShutdownAbandon)
		}
	}
}

func drainSignals[T any](ch chan T) {
	for {
		select {
		case <-ch:
		default:
			return
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

// finishHook decides a Finish call before it reaches the store: fork is the
// name of the store fork the call came through ("pool-online", …); a
// non-nil error fails the call and writes nothing.
type finishHook func(ctx context.Context, fork string, items []store.FinishItem) error

// evidenceHook decides an AppendEvidence call like a finishHook.
type evidenceHook func(ctx context.Context, lease store.Lease) error

// claimHook sees each Claim call's answer (the outcome in p included)
// before the pool does, and may change the outcome.
type claimHook func(p *store.ClaimParams, claimed []*store.ClaimedTask)

// hookedStore wraps a store (and every fork of it) with hooks on Finish,
// AppendEvidence and Claim: a fault store that can look at what is written.
type hookedStore struct {
	store.Store
	fork     string
	finish   finishHook   // nil: none
	evidence evidenceHook // nil: none
	claim    claimHook    // nil: none
}

var _ store.Store = (*hookedStore)(nil)

func (s *hookedStore) Finish(ctx context.Context, p *store.FinishParams) ([]store.FinishResult, error) {
	if s.finish != nil {
		if err := s.finish(ctx, s.fork, p.Items); err != nil {
			return nil, err
		}
	}
	return s.Store.Finish(ctx, p)
}

func (s *hookedStore) AppendEvidence(ctx context.Context, p *store.AppendEvidenceParams) error {
	if s.evidence != nil {
		if err := s.evidence(ctx, p.Lease); err != nil {
			return err
		}
	}
	return s.Store.AppendEvidence(ctx, p)
}

func (s *hookedStore) Claim(ctx context.Context, p *store.ClaimParams) ([]*store.ClaimedTask, error) {
	claimed, err := s.Store.Claim(ctx, p)
	if err == nil && s.claim != nil {
		s.claim(p, claimed)
	}
	return claimed, err
}

func (s *hookedStore) Fork(name string, opts store.ForkOptions) (store.Store, error) {
	f, err := s.Store.Fork(name, opts)
	if err != nil {
		return nil, err
	}
	return &hookedStore{Store: f, fork: name, finish: s.finish, evidence: s.evidence, claim: s.claim}, nil
}

// withFinishHook makes the service's Finish calls go through hook.
func withFinishHook(hook finishHook) harnessOption {
	return func(h *harness, _ *Config) {
		h.st = &hookedStore{Store: h.st, fork: "api", finish: hook}
	}
}

// withClaimHook makes the service's Claim calls go through hook.
func withClaimHook(hook claimHook) harnessOption {
	return func(h *harness, _ *Config) {
		h.st = &hookedStore{Store: h.st, fork: "api", claim: hook}
	}
}

// withEvidenceHook makes the service's AppendEvidence calls go through hook.
func withEvidenceHook(hook evidenceHook) harnessOption {
	return func(h *harness, _ *Config) {
		h.st = &hookedStore{Store: h.st, fork: "api", evidence: hook}
	}
}

// ticks receives a signal after every tick of each scheduler.
type ticks struct {
	recovery, heartbeat, deadline, cleaner chan struct{}
}

// watchTicks turns on the schedulers' tick signals; call before start.
func (h *harness) watchTicks() *ticks {
	sig := h.svc.signals
	sig.recovery.ticked.init()
	sig.heartbeat.ticked.init()
	sig.deadline.ticked.init()
	sig.cleaner.ticked.init()
	return &ticks{sig.recovery.ticked.ch, sig.heartbeat.ticked.ch, sig.deadline.ticked.ch, sig.cleaner.ticked.ch}
}

// await waits for one signal.
func await[T any](t *testing.T, what string, ch chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(signalTimeout):
		t.Fatalf("no %s signal within %s", what, signalTimeout)
		var zero T
		return zero
	}
}

// watchOutcomes turns on the completers' outcome signal; call before start.
func (h *harness) watchOutcomes() chan outcome {
	h.svc.signals.outcome.init()
	return h.svc.signals.outcome.ch
}

// awaitOutcome waits until a completer is done with an outcome of task id
// with the given status (discarding every other outcome).
func awaitOutcome(t *testing.T, ch chan outcome, id string, want outcomeStatus) outcome {
	t.Helper()
	for {
		if o := await(t, "outcome of "+id, ch); o.TaskID == id && o.Status == want {
			return o
		}
	}
}

// watchWorkers turns on the workers' done signal; call before start.
func (h *harness) watchWorkers() chan string {
	h.svc.signals.workerDone.init()
	return h.svc.signals.workerDone.ch
}

// awaitValue receives from ch until it gets want.
func awaitValue[T comparable](t *testing.T, what string, ch chan T, want T) {
	t.Helper()
	for await(t, what, ch) != want {
	}
}

// awaitN receives n values.
func awaitN[T any](t *testing.T, what string, ch chan T, n int) []T {
	t.Helper()
	out := make([]T, 0, n)
	for range n {
		out = append(out, await(t, what, ch))
	}
	return out
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

// submitAll submits reqs concurrently (the admitter group-commits them)
// and returns each result's task, in order; any error fails the test.
func (h *harness) submitAll(p dockettype.Principal, reqs []*SubmitRequest) []*dockettype.Task {
	h.t.Helper()
	tasks := make([]*dockettype.Task, len(reqs))
	errs := make([]error, len(reqs))
	var wg sync.WaitGroup
	for i, req := range reqs {
		wg.Go(func() {
			res, err := h.svc.Submit(context.Background(), p, req)
			if err != nil {
				errs[i] = err
				return
			}
			tasks[i] = res.Task
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			h.t.Fatalf("submit %s: %v", reqs[i].IdempotencyKey, err)
		}
	}
	return tasks
}

// fresh makes n requests for workflow with keys prefix-0, prefix-1, ….
func fresh(n int, prefix, workflow string, input func(i int) string) []*SubmitRequest {
	reqs := make([]*SubmitRequest, n)
	for i := range reqs {
		reqs[i] = &SubmitRequest{IdempotencyKey: fmt.Sprint(prefix, i), Workflow: workflow, Input: json.RawMessage(input(i))}
	}
	return reqs
}

func (h *harness) get(p dockettype.Principal, id string) *dockettype.Task {
	h.t.Helper()
	task, err := h.svc.Get(context.Background(), p, id)
	if err != nil {
		h.t.Fatalf("get %s: %v", id, err)
	}
	return task
}

// waitTerminal waits, on the service's own long poll (woken when this node
// makes the task terminal), until the task is terminal, and checks its
// state.
func (h *harness) waitTerminal(p dockettype.Principal, id string, want dockettype.State) *dockettype.Task {
	h.t.Helper()
	task := waitTerminal(h.t, h.svc, p, id)
	if task.State != want {
		h.t.Fatalf("task %s ended %s (error %+v), want %s", id, task.State, task.Error, want)
	}
	return task
}

// waitTerminal long-polls svc until the task is terminal. A long poll that
// answers early (the test moved the fake clock past its bound) is simply
// made again.
func waitTerminal(t *testing.T, svc *Service, p dockettype.Principal, id string) *dockettype.Task {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), signalTimeout)
	defer cancel()
	for {
		select {
		case <-svc.draining.done():
			t.Fatalf("waiting for task %s on a service that is stopping", id)
		default:
		}
		task, err := svc.Wait(ctx, p, id, MaxWait)
		if err != nil {
			t.Fatalf("task %s not terminal within %s: %v", id, signalTimeout, err)
		}
		if task.State.Terminal() {
			return task
		}
	}
}

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
