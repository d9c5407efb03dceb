// Package bench measures Docket against a store in-process, the way
// `river bench` measures River: the real ExecutionService (fencing, quotas,
// fair dispatch and the event history all on) running a no-op workflow.
//
//	res, err := bench.Run(ctx, st, bench.Options{Mode: bench.BurnDown, Tasks: 20000})
//
// Four modes: BurnDown admits Tasks tasks with batch admission while the
// pools are stopped, then starts them and times the drain; Continuous keeps
// a backlog topped up while the pools work and counts what they finish in
// Duration; HTTP runs Clients concurrent HTTP clients doing single submits
// against an in-process server on a loopback port for Duration; Remote is
// BurnDown's drain done by Go SDK workers over the worker API of an
// in-process server on a loopback port.
package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/defaults"
	"github.com/docket-dev/docket/internal/inprocess"
	"github.com/docket-dev/docket/internal/metrics"
	"github.com/docket-dev/docket/internal/queue"
	"github.com/docket-dev/docket/internal/remote"
	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/workflow"
)

// Mode is what a run measures.
type Mode string

// Modes.
const (
	BurnDown   Mode = "burn-down"
	Continuous Mode = "continuous"
	HTTP       Mode = "http"
	// Remote is a burn-down through the worker protocol: Go SDK workers
	// (worker/) drain the backlog over HTTP from a server on a loopback
	// port.
	Remote Mode = "remote"
)

// Workflow is the no-op workflow every bench task runs (online pool).
const Workflow = "bench.noop"

// RemoteWorkflow is the remote workflow of remote mode (online pool): its
// tasks are run by the Go SDK workers, whose handler does nothing.
const RemoteWorkflow = "bench.remote"

// Options configures a run. Zero values take the defaults noted.
type Options struct {
	Mode     Mode
	Tasks    int           // burn-down: tasks to admit and drain (required)
	Duration time.Duration // continuous, http: measuring window (required)
	Clients  int           // http: concurrent clients; default 64
	Tenants  int           // the load is spread over this many tenants; default 1
	Workers  int           // online pool workers (per node); 0: the queue's default; -1 (http only): none, admission alone
	Nodes    int           // burn-down, continuous: nodes working the one store, each with its own connections; default 1
	// AdmitCommitters is the queue's (see queue.Config); docket bench sets
	// what docket serve does for the store.
	AdmitCommitters int
	Capacity        int           // online pool capacity; default 100,000,000 (it is checked, never reached)
	Batch           int           // tasks per batch admission; default queue.MaxBatchItems
	Backlog         int           // continuous: queued tasks kept ahead of the workers; default 5,000
	Timeout         time.Duration // bound on the whole run, drain included; default 30m
	// RemoteWorkers is remote mode's number of Go SDK workers (each its
	// own HTTP connections); default 4. Slots is each one's slots (and so
	// its largest claim); default 500.
	RemoteWorkers int
	Slots         int

	// Progress receives a progress line every ProgressEvery (default 1s);
	// nil prints none.
	Progress      io.Writer
	ProgressEvery time.Duration
	// Logger receives the service's logs; default discards them.
	Logger *slog.Logger
	// Clock is the one clock of a run: the service's (leases, deadlines)
	// and the bench's own timing. Default: the real clock.
	Clock clockwork.Clock
}

// Result is what a run measured. Tasks, Seconds and TasksPerSecond are the
// figure of the mode: tasks drained (burn-down), finished in the window
// (continuous) or admitted by 201 answers (http).
type Result struct {
	Mode           Mode    `json:"mode"`
	Tasks          int     `json:"tasks"`
	Seconds        float64 `json:"seconds"`
	TasksPerSecond float64 `json:"tasks_per_second"`
	// P50MS and P99MS are latencies in milliseconds: admission→finish of
	// each task (burn-down, continuous: from the tasks' created_at and
	// finished_at, over a sample of LatencySamples tasks), or per request
	// (http). Latency names which.
	P50MS          float64 `json:"p50_ms"`
	P99MS          float64 `json:"p99_ms"`
	Latency        string  `json:"latency"`
	LatencySamples int     `json:"latency_samples"`
	// PeakRSSBytes is the process's peak resident set (VmHWM) when the
	// measured phase ended; 0 where /proc is missing.
	PeakRSSBytes int64 `json:"peak_rss_bytes"`
	// Windows is continuous mode's rate in consecutive windows (a tenth of
	// the duration; a minute for runs of five minutes or more), to show
	// whether throughput holds as the tables grow.
	Windows []float64 `json:"windows_tasks_per_second,omitempty"`

	Tenants  int `json:"tenants"`
	Nodes    int `json:"nodes"`
	Workers  int `json:"workers"`
	Clients  int `json:"clients,omitempty"`
	Capacity int `json:"capacity"`
	// RemoteWorkers and Slots are remote mode's Go SDK workers and the
	// slots of each (Workers, the in-process pool's, is then 0).
	RemoteWorkers int `json:"remote_workers,omitempty"`
	Slots         int `json:"slots,omitempty"`

	// Admitted counts the tasks the run admitted; AdmitSeconds is the
	// burn-down's preload time.
	Admitted            int                      `json:"admitted"`
	AdmitSeconds        float64                  `json:"admit_seconds,omitempty"`
	AdmitTasksPerSecond float64                  `json:"admit_tasks_per_second,omitempty"`
	Terminal            int                      `json:"terminal"` // tasks that reached a terminal state during the run
	States              map[dockettype.State]int `json:"states"`
	Answers             map[int]int              `json:"answers,omitempty"` // http: answers by status
}

// Run runs one bench on st. It migrates nothing: open st with the usual
// migrations. The tasks it admits stay in the database.
func Run(ctx context.Context, st store.Store, opts Options) (*Result, error) {
	if err := opts.setDefaults(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	h, err := newHarness(st, opts)
	if err != nil {
		return nil, err
	}
	defer h.stop()
	var res *Result
	switch opts.Mode {
	case BurnDown:
		res, err = h.burnDown(ctx)
	case Continuous:
		res, err = h.continuous(ctx)
	case HTTP:
		res, err = h.httpClients(ctx)
	case Remote:
		res, err = h.remoteBurnDown(ctx)
	}
	if err != nil {
		if errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
			return nil, fmt.Errorf("the run did not finish within %s: %w", opts.Timeout, err)
		}
		return nil, err
	}
	res.Mode = opts.Mode
	res.Tenants, res.Capacity, res.Nodes = opts.Tenants, opts.Capacity, opts.Nodes
	res.Workers = max(h.svc.Config().Online.Workers, 0)
	if res.Seconds > 0 {
		res.TasksPerSecond = float64(res.Tasks) / res.Seconds
	}
	res.States = h.states()
	res.Terminal = h.terminal()
	return res, nil
}

// Check reports whether the options are valid (after defaults), without
// running anything.
func (o Options) Check() error { return o.setDefaults() }

func (o *Options) setDefaults() error {
	switch o.Mode {
	case BurnDown, Remote:
		if o.Tasks <= 0 {
			return fmt.Errorf("%s needs a positive number of tasks", o.Mode)
		}
	case Continuous, HTTP:
		if o.Duration <= 0 {
			return fmt.Errorf("%s needs a positive duration", o.Mode)
		}
	default:
		return fmt.Errorf("mode must be %s, %s, %s or %s, not %q", BurnDown, Continuous, HTTP, Remote, o.Mode)
	}
	if o.Workers < 0 && o.Mode != HTTP {
		return fmt.Errorf("%s needs workers", o.Mode)
	}
	if o.Clients == 0 {
		o.Clients = 64
	}
	if o.Tenants == 0 {
		o.Tenants = 1
	}
	if o.Nodes == 0 {
		o.Nodes = 1
	}
	if o.Nodes < 1 || o.Nodes > 16 || o.Nodes > 1 && (o.Mode == HTTP || o.Mode == Remote) {
		return errors.New("nodes must be between 1 and 16 (1 in http and remote modes)")
	}
	if o.RemoteWorkers == 0 {
		o.RemoteWorkers = 4
	}
	if o.Slots == 0 {
		o.Slots = 500
	}
	if o.Capacity == 0 {
		o.Capacity = 100_000_000
	}
	if o.Batch == 0 {
		o.Batch = queue.MaxBatchItems
	}
	if o.Backlog == 0 {
		o.Backlog = 5000
	}
	if o.Timeout == 0 {
		o.Timeout = 30 * time.Minute
	}
	if o.ProgressEvery == 0 {
		o.ProgressEvery = time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Clock == nil {
		o.Clock = clockwork.NewRealClock()
	}
	switch {
	case o.Clients < 1, o.Tenants < 1, o.Capacity < 1, o.Backlog < 1, o.RemoteWorkers < 1, o.Slots < 1:
		return errors.New("clients, tenants, capacity, backlog, remote workers and slots must be positive")
	case o.Slots > queue.MaxClaimTasks:
		return fmt.Errorf("slots must be at most %d (the largest claim)", queue.MaxClaimTasks)
	case o.Batch < 1 || o.Batch > queue.MaxBatchItems:
		return fmt.Errorf("batch must be between 1 and %d", queue.MaxBatchItems)
	}
	return nil
}

// harness is one run's service and bookkeeping.
type harness struct {
	opts    Options
	clock   clockwork.Clock // opts.Clock
	st      store.Store
	svc     *queue.Service   // the first node: admission goes through it
	nodes   []*queue.Service // every node (svc first), sharing the metrics
	forks   []store.Store    // the other nodes' store handles
	remote  *remote.Runtime  // remote mode's runtime (remote workflows); nil in the others
	wf      string           // the workflow every task runs: Workflow, or RemoteWorkflow
	metrics *metrics.Metrics
	run     string                 // makes this run's idempotency keys unique
	tenants []dockettype.Principal // the load's principals, one per tenant
	sample  *sample                // task IDs for latency and the final check
	seq     int                    // next task number (idempotency key)
}

func newHarness(st store.Store, opts Options) (*harness, error) {
	reg := workflow.NewRegistry()
	err := reg.Register(Workflow, workflow.Definition{Pool: dockettype.PoolOnline, Run: noop})
	if err != nil {
		return nil, err
	}
	m := metrics.New()
	var b [4]byte
	_, _ = rand.Read(b[:])
	h := &harness{opts: opts, clock: opts.Clock, st: st, metrics: m, run: hex.EncodeToString(b[:]), sample: newSample(sampleSize), wf: Workflow}
	var rt queue.Runtime = inprocess.New(reg, nil)
	online := opts.Workers
	if opts.Mode == Remote {
		// The remote workflows are the server's as docket serve has them;
		// the node's own pool has nothing to run.
		h.remote = remote.New(inprocess.New(reg, nil), st, nil, opts.Clock)
		rt, online, h.wf = h.remote, defaults.NoWorkers, RemoteWorkflow
	}
	// Each node after the first has its own store handle (its own
	// connections), as a separate process would.
	for i := range opts.Nodes {
		nodeStore := st
		if i > 0 {
			f, err := st.Fork(fmt.Sprintf("node-%d", i+1), store.ForkOptions{MaxConns: 8})
			if err != nil {
				h.stop()
				return nil, err
			}
			h.forks = append(h.forks, f)
			nodeStore = f
		}
		svc, err := queue.New(nodeStore, rt, queue.Config{
			NodeID:          fmt.Sprintf("bench-%s-%d", h.run, i+1),
			Online:          queue.PoolConfig{Workers: online, Capacity: opts.Capacity},
			Offline:         queue.PoolConfig{Workers: defaults.NoWorkers},
			Retention:       defaults.Unlimited, // no cleaner: the bench keeps what it ran
			AdmitCommitters: opts.AdmitCommitters,
			Logger:          opts.Logger,
			Metrics:         m,
			Clock:           opts.Clock,
		})
		if err != nil {
			h.stop()
			return nil, err
		}
		h.nodes = append(h.nodes, svc)
	}
	h.svc = h.nodes[0]
	for i := range opts.Tenants {
		h.tenants = append(h.tenants, dockettype.Principal{Tenant: fmt.Sprintf("bench-%d", i+1), Name: "bench", Role: dockettype.RoleMember})
	}
	return h, nil
}

// start starts every node.
func (h *harness) start(ctx context.Context) error {
	for _, n := range h.nodes {
		if err := n.Start(ctx); err != nil {
			return fmt.Errorf("start the service: %w", err)
		}
	}
	return nil
}

// stop stops every node and closes their store handles.
func (h *harness) stop() {
	for _, n := range h.nodes {
		n.Stop()
	}
	for _, f := range h.forks {
		f.Close()
	}
}

// noop is the bench workflow: it does nothing and succeeds.
func noop(context.Context, *workflow.Binding, json.RawMessage) (json.RawMessage, error) {
	return nil, nil
}

// nextKey returns a new idempotency key of this run.
func (h *harness) nextKey() string {
	h.seq++
	return fmt.Sprintf("bench-%s-%d", h.run, h.seq)
}

// admitBatch admits n tasks (n <= Batch) for one tenant with one
// SubmitBatch call. Any refusal is an error: the bench sizes capacity so
// that none happens.
func (h *harness) admitBatch(ctx context.Context, tenant dockettype.Principal, n int) error {
	reqs := make([]*queue.SubmitRequest, n)
	for i := range reqs {
		reqs[i] = &queue.SubmitRequest{IdempotencyKey: h.nextKey(), Workflow: h.wf}
	}
	res, err := h.svc.SubmitBatch(ctx, tenant, reqs)
	if err != nil {
		return fmt.Errorf("batch admission: %w", err)
	}
	for _, r := range res {
		if r.Err != nil {
			return fmt.Errorf("batch admission refused a task: %s (%s)", r.Err.Code, r.Err.Message)
		}
		h.sample.add(r.Task.Tenant, r.Task.ID)
	}
	return nil
}

// terminal counts the tasks that became terminal since the service was
// built: finished, timed out, cancelled, or failed by lease recovery.
func (h *harness) terminal() int {
	n := 0
	for _, v := range h.states() {
		n += v
	}
	return n
}

// states counts terminal outcomes by state, from the service's metrics.
func (h *harness) states() map[dockettype.State]int {
	out := map[dockettype.State]int{}
	ch := make(chan prometheus.Metric, 64)
	h.metrics.TerminalOutcomes.Collect(ch)
	h.metrics.LeasesRecovered.WithLabelValues("failed").Collect(ch)
	close(ch)
	for m := range ch {
		var d dto.Metric
		if m.Write(&d) != nil {
			continue
		}
		state := dockettype.StateFailed // leases_recovered_total{outcome="failed"}
		for _, l := range d.GetLabel() {
			if l.GetName() == "state" {
				state = dockettype.State(l.GetValue())
			}
		}
		if v := int(d.GetCounter().GetValue()); v > 0 {
			out[state] += v
		}
	}
	return out
}

// waitTerminal waits until want tasks are terminal and every sampled task
// is, printing progress, and returns when the count reached want. It polls
// counters in memory, so its resolution is pollEvery.
func (h *harness) waitTerminal(ctx context.Context, want int, p *progress, line func() string) (time.Time, error) {
	tick := h.clock.NewTicker(pollEvery)
	defer tick.Stop()
	var reached, nextCheck time.Time
	for {
		if reached.IsZero() && h.terminal() >= want {
			reached = h.clock.Now()
		}
		if !reached.IsZero() && h.clock.Now().After(nextCheck) {
			// Recovery may also finish tasks of an earlier, interrupted run
			// on the same database: the sample checks that this run's are.
			done, err := h.sample.allTerminal(ctx, h.st)
			if err != nil || done {
				return reached, err
			}
			reached = time.Time{}
			nextCheck = h.clock.Now().Add(100 * time.Millisecond)
		}
		p.maybe(line)
		select {
		case <-ctx.Done():
			return time.Time{}, context.Cause(ctx)
		case <-tick.Chan():
		}
	}
}

// pollEvery is how often the bench reads its counters while it waits.
const pollEvery = 2 * time.Millisecond
