//go:build unix

package faultcheck

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/docket-dev/docket/client"
	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// Options configure a run of the checker.
type Options struct {
	// Binary is the docket executable run as the server under test
	// (`serve`) and for the admin commands (`migrate`, `keys create`,
	// `tenants set-limits`).
	Binary string
	// DB is the database: a SQLite file path or a postgres:// URL.
	DB string
	// OpenStore opens DB for the checker's own reads (the store contract).
	OpenStore func(ctx context.Context, db string) (store.Store, error)
	// Scenarios to run, in order.
	Scenarios []string
	// Duration is how long the load and the faults run, per scenario.
	Duration time.Duration
	// Seed makes the fault schedule and the load's choices reproducible.
	Seed uint64
	// WorkDir holds each scenario's node logs, execution logs and history.
	WorkDir string
	// Clients is the number of concurrent client processes; default 10.
	Clients int
	// DrainTimeout bounds the wait for every task to be terminal after the
	// load; default 90s.
	DrainTimeout time.Duration
	// LeaseTTL is the servers' lease TTL; default 3s. Heartbeat and
	// recovery intervals follow it.
	LeaseTTL time.Duration
	// Progress receives a line per step; nil for none.
	Progress io.Writer
	// Clock times the run: the load and drain windows, the waits between
	// faults and the stamps of the history. The servers under test keep
	// their own clocks. Default: the real clock.
	Clock clockwork.Clock
}

// Limits the servers under test run with: small, so that admission is
// refused often and the checker can see it never lets one task too many in.
const (
	poolCapacity = 16
	nodeWorkers  = 8
	clockSkew    = 30 * time.Second
)

// tenantLimits are the tenants of a run: two with small limits, one bounded
// by the pool alone.
var tenantLimits = []struct {
	suffix string
	limit  int
}{{"a", 3}, {"b", 6}, {"c", 0}}

// Run runs each scenario of opts in turn and returns their reports.
func Run(ctx context.Context, opts Options) ([]*Report, error) {
	if opts.Clients <= 0 {
		opts.Clients = 10
	}
	if opts.DrainTimeout <= 0 {
		opts.DrainTimeout = 90 * time.Second
	}
	if opts.LeaseTTL <= 0 {
		opts.LeaseTTL = 3 * time.Second
	}
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	if opts.Clock == nil {
		opts.Clock = clockwork.NewRealClock()
	}
	if err := os.MkdirAll(opts.WorkDir, 0o700); err != nil {
		return nil, err
	}
	postgres := isPostgres(opts.DB)
	if !postgres {
		abs, err := filepath.Abs(opts.DB)
		if err != nil {
			return nil, err
		}
		opts.DB = abs
	}
	if out, err := exec.CommandContext(ctx, opts.Binary, "migrate", "--db", opts.DB).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("docket migrate: %v: %s", err, redactOutput(out))
	}
	var reports []*Report
	for i, name := range opts.Scenarios {
		if ctx.Err() != nil {
			return reports, ctx.Err()
		}
		rep := &Report{Scenario: name, Store: storeKind(postgres), Seed: opts.Seed}
		reports = append(reports, rep)
		if why := SkipReason(name, postgres); why != "" {
			rep.Skipped = why
			fmt.Fprintf(opts.Progress, "faultcheck: %s: skipped: %s\n", name, why)
			continue
		}
		sc := &scenarioRun{opts: opts, hist: NewHistory(opts.Clock), name: name, postgres: postgres, rep: rep,
			unfinished: map[string]dockettype.State{},
			seed:       opts.Seed ^ uint64(i+1)*0x9e3779b97f4a7c15}
		sc.run(ctx)
	}
	return reports, ctx.Err()
}

func storeKind(postgres bool) string {
	if postgres {
		return "postgres"
	}
	return "sqlite"
}

func isPostgres(db string) bool {
	return strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://")
}

// scenarioRun is one scenario: its servers, proxies, load and faults.
type scenarioRun struct {
	opts     Options
	name     string
	postgres bool
	seed     uint64
	rep      *Report
	dir      string
	hist     *History

	tenants  []string
	keys     map[string]string // tenant → API key
	limits   Limits
	nodes    []*Node
	direct   []*tenantClients // each tenant through the first node, no proxy
	via      []*tenantClients // each tenant through the endpoints the load uses
	proxy    *TCPProxy
	dropper  *ResponseDropper
	pg       *pgCluster
	stayUp   bool // no node is killed, frozen or cut off
	nemesis  func(ctx context.Context, rng *mrand.Rand) error
	logFiles []io.Closer
	// unfinished are the tasks still queued or running when a drain's
	// bound passed.
	unfinished map[string]dockettype.State
}

func (s *scenarioRun) progress(format string, a ...any) {
	fmt.Fprintf(s.opts.Progress, "faultcheck: %s: %s\n", s.name, fmt.Sprintf(format, a...))
}

func (s *scenarioRun) run(ctx context.Context) {
	defer s.teardown()
	if err := s.setup(ctx); err != nil {
		if errors.Is(err, errSkip) {
			return
		}
		s.rep.Error = err.Error()
		s.progress("error: %s", err)
		return
	}
	if err := s.exercise(ctx); err != nil {
		s.rep.Error = err.Error()
		s.progress("error: %s", err)
	}
}

// errSkip: the scenario cannot run here; the report says why.
var errSkip = errors.New("skipped")

func (s *scenarioRun) skip(why string) error {
	s.rep.Skipped = why
	s.progress("skipped: %s", why)
	return errSkip
}

// setup makes the tenants and keys, starts the servers and builds the
// scenario's proxies and fault schedule.
func (s *scenarioRun) setup(ctx context.Context) error {
	s.dir = filepath.Join(s.opts.WorkDir, s.name)
	if err := os.MkdirAll(filepath.Join(s.dir, "exec"), 0o700); err != nil {
		return err
	}
	s.rep.Dir = s.dir
	if s.name == ScenarioPGRestart {
		pg, why := findPGCluster(s.opts.DB)
		if pg == nil {
			return s.skip(why)
		}
		pg.clock = s.opts.Clock
		s.pg = pg
	}

	var suffix [3]byte
	_, _ = rand.Read(suffix[:])
	run := hex.EncodeToString(suffix[:])
	s.keys = map[string]string{}
	s.limits = Limits{PoolCapacity: poolCapacity, Tenants: map[string]int{}}
	for _, tl := range tenantLimits {
		tenant := fmt.Sprintf("fc-%s-%s-%s", s.name, run, tl.suffix)
		key, err := s.admin(ctx, "keys", "create", "--db", s.opts.DB, "--tenant", tenant, "--principal", "faultcheck", "--default-tenant-limit", "0")
		if err != nil {
			return err
		}
		if _, err := s.admin(ctx, "tenants", "set-limits", "--db", s.opts.DB, "--tenant", tenant, "--max-in-flight", fmt.Sprint(tl.limit)); err != nil {
			return err
		}
		s.tenants = append(s.tenants, tenant)
		s.keys[tenant] = strings.TrimSpace(key)
		s.limits.Tenants[tenant] = tl.limit
	}

	nodeDB := s.opts.DB
	nodes := 1
	switch s.name {
	case ScenarioPause, ScenarioClockSkew:
		if s.postgres {
			nodes = 2
		}
	case ScenarioConnReset:
		if s.postgres {
			host, port, ok := pgHostPort(s.opts.DB)
			if !ok || host == "" || strings.HasPrefix(host, "/") {
				return s.skip("the --db URL names no TCP host and port to put a proxy in front of")
			}
			p, err := NewTCPProxy(net.JoinHostPort(host, fmt.Sprint(port)), s.opts.Clock)
			if err != nil {
				return err
			}
			s.proxy = p
			if nodeDB, err = withHostPort(s.opts.DB, p.Addr()); err != nil {
				return err
			}
		}
	}
	for i := range nodes {
		n, err := s.newNode(ctx, string(rune('a'+i)), nodeDB, i == 1 && s.name == ScenarioClockSkew)
		if err != nil {
			return err
		}
		s.nodes = append(s.nodes, n)
	}
	s.rep.Nodes = len(s.nodes)
	for _, n := range s.nodes {
		if err := n.Start(ctx); err != nil {
			return err
		}
	}

	// The endpoints the load talks to.
	var endpoints []string
	for _, n := range s.nodes {
		endpoints = append(endpoints, "http://"+n.Addr)
	}
	switch {
	case s.name == ScenarioConnReset && !s.postgres:
		p, err := NewTCPProxy(s.nodes[0].Addr, s.opts.Clock)
		if err != nil {
			return err
		}
		s.proxy = p
		endpoints = []string{"http://" + p.Addr()}
		s.rep.Notes = append(s.rep.Notes, "SQLite has no database connection to cut: the proxy sits between the clients and the server")
	case s.name == ScenarioAmbiguous:
		tenantOf := map[string]string{}
		for t, k := range s.keys {
			tenantOf[k] = t
		}
		d, err := NewResponseDropper(endpoints[0], s.hist, tenantOf, s.seed)
		if err != nil {
			return err
		}
		s.dropper = d
		endpoints = []string{d.URL()}
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}}
	for _, t := range s.tenants {
		tc := &tenantClients{tenant: t}
		for _, e := range endpoints {
			tc.via = append(tc.via, client.New(e, s.keys[t], client.WithHTTPClient(hc)))
		}
		s.via = append(s.via, tc)
		s.direct = append(s.direct, &tenantClients{tenant: t, via: []*client.Client{client.New("http://"+s.nodes[0].Addr, s.keys[t])}})
	}
	s.plan()
	return nil
}

// admin runs a docket admin command and returns its stdout.
func (s *scenarioRun) admin(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, s.opts.Binary, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("docket %s %s: %v: %s", args[0], args[1], err, redactOutput(stderr.Bytes()))
	}
	return string(out), nil
}

// newNode prepares a server on a free loopback port.
func (s *scenarioRun) newNode(ctx context.Context, name, db string, skewed bool) (*Node, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	logf, err := os.OpenFile(filepath.Join(s.dir, "node-"+name+".log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	s.logFiles = append(s.logFiles, logf)
	ttl := s.opts.LeaseTTL
	args := []string{
		"--db", db, "--listen", addr, "--mode", "demo",
		"--lease-ttl", ttl.String(), "--heartbeat-interval", (ttl / 3).String(),
		"--recovery-interval", (ttl / 6).String(), "--deadline-interval", (ttl / 6).String(),
		"--online-workers", fmt.Sprint(nodeWorkers), "--offline-workers", "1",
		"--online-capacity", fmt.Sprint(poolCapacity), "--default-timeout", "2m", "--shutdown-grace", "2s",
		"--faultcheck-probe", filepath.Join(s.dir, "exec"),
	}
	if skewed {
		args = append(args, "--clock-offset", clockSkew.String())
		s.rep.Notes = append(s.rep.Notes, fmt.Sprintf("node %s runs with its clock %s ahead", name, clockSkew))
	}
	return &Node{Name: name, Addr: addr, bin: s.opts.Binary, args: args, log: logf, clock: s.opts.Clock}, nil
}

// plan sets the scenario's fault schedule.
func (s *scenarioRun) plan() {
	ttl := s.opts.LeaseTTL
	switch s.name {
	case ScenarioKill9:
		s.nemesis = func(ctx context.Context, rng *mrand.Rand) error {
			for {
				if s.sleepBetween(ctx, rng, time.Second, 4*time.Second) != nil {
					return nil
				}
				n := s.nodes[rng.IntN(len(s.nodes))]
				s.hist.Fault(FaultKill + " " + n.Name)
				if err := n.Kill(); err != nil {
					return err
				}
				_ = s.sleepBetween(context.Background(), rng, 0, time.Second)
				if err := n.Start(context.Background()); err != nil {
					return err
				}
				s.hist.Fault(FaultStart + " " + n.Name)
			}
		}
	case ScenarioPGRestart:
		s.nemesis = func(ctx context.Context, rng *mrand.Rand) error {
			for {
				if s.sleepBetween(ctx, rng, 2*time.Second, 5*time.Second) != nil {
					return nil
				}
				s.hist.Fault(FaultPGStop)
				if err := s.pg.Stop(context.Background()); err != nil {
					return err
				}
				_ = s.sleepBetween(context.Background(), rng, time.Second, 3*time.Second)
				if err := s.pg.Start(context.Background()); err != nil {
					return err
				}
				s.hist.Fault(FaultPGStart)
			}
		}
	case ScenarioConnReset:
		s.nemesis = func(ctx context.Context, rng *mrand.Rand) error {
			for {
				if s.sleepBetween(ctx, rng, 300*time.Millisecond, 1500*time.Millisecond) != nil {
					return nil
				}
				switch x := rng.Float64(); {
				case x < 0.4:
					s.proxy.ResetAll()
					s.hist.Fault(FaultResetAll)
				case x < 0.7:
					s.proxy.ResetOne(rng.IntN(1 << 20))
					s.hist.Fault(FaultResetOne)
				default:
					d := randBetween(rng, 500*time.Millisecond, ttl+time.Second)
					s.proxy.Stall(d)
					s.hist.Fault(FaultStall)
					if sleep(ctx, s.opts.Clock, d) != nil {
						return nil
					}
					if rng.IntN(2) == 0 {
						s.proxy.ResetAll()
						s.hist.Fault(FaultResetAll)
					}
				}
			}
		}
	case ScenarioAmbiguous:
		s.stayUp = true
		s.nemesis = func(ctx context.Context, rng *mrand.Rand) error {
			s.dropper.SetRate(0.25)
			<-ctx.Done()
			s.dropper.SetRate(0)
			return nil
		}
	case ScenarioPause:
		s.nemesis = func(ctx context.Context, rng *mrand.Rand) error {
			for {
				if s.sleepBetween(ctx, rng, time.Second, 3*time.Second) != nil {
					return nil
				}
				n := s.nodes[rng.IntN(len(s.nodes))]
				if err := n.Pause(); err != nil {
					return err
				}
				s.hist.Fault(FaultPause + " " + n.Name)
				_ = s.sleepBetween(context.Background(), rng, ttl+time.Second, 2*ttl+time.Second)
				if err := n.Resume(); err != nil {
					return err
				}
				s.hist.Fault(FaultResume + " " + n.Name)
			}
		}
	case ScenarioClockSkew:
		s.stayUp = true
		s.nemesis = func(ctx context.Context, rng *mrand.Rand) error {
			<-ctx.Done()
			return nil
		}
	}
}

// exercise runs the load under the faults, heals, drains, resolves every
// key and checks.
func (s *scenarioRun) exercise(ctx context.Context) error {
	s.progress("%s, %d node(s), load for %s, seed %d, work dir %s", storeKind(s.postgres), len(s.nodes), s.opts.Duration, s.opts.Seed, s.dir)
	wl := newWorkload(s.hist, s.via, "k", s.seed)
	// The load window ends on the run's clock (context.WithTimeout would
	// end it on the real one).
	loadCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	window := s.opts.Clock.AfterFunc(s.opts.Duration, stopLoad)
	defer window.Stop()
	start := s.opts.Clock.Now()
	var nemesisErr error
	var wg sync.WaitGroup
	wg.Go(func() { nemesisErr = s.nemesis(loadCtx, mrand.New(mrand.NewPCG(s.seed, 0xfa17))) })
	wg.Go(func() {
		wl.run(loadCtx, s.opts.Clients)
		s.rep.LoadSeconds = s.opts.Clock.Since(start).Seconds()
	})
	wg.Wait()
	healErr := s.heal()
	s.rep.Faults = s.faultCounts()
	s.rep.StoreErrors = map[string]int{}
	for _, n := range s.nodes {
		_ = scrapeStoreErrors(ctx, "http://"+n.Addr, s.rep.StoreErrors)
	}
	if s.dropper != nil {
		s.rep.Notes = append(s.rep.Notes, fmt.Sprintf("%d answers dropped after their submits committed", s.dropper.Dropped()))
	}
	if nemesisErr != nil {
		return fmt.Errorf("inject faults: %w", nemesisErr)
	}
	if healErr != nil {
		return fmt.Errorf("heal: %w", healErr)
	}
	s.progress("load done after %.1f s, faults healed after %.1f s: %d calls; faults %s",
		s.rep.LoadSeconds, s.opts.Clock.Since(start).Seconds(), len(s.hist.Ops()), formatCounts(s.rep.Faults))

	st, err := s.opts.OpenStore(ctx, s.opts.DB)
	if err != nil {
		return fmt.Errorf("open the store to check it: %w", err)
	}
	defer st.Close()
	if err := s.drain(ctx, st); err != nil {
		return err
	}
	if err := s.resolve(ctx, wl); err != nil {
		return err
	}
	if err := s.drain(ctx, st); err != nil {
		return err
	}

	ops := s.hist.Ops()
	acked := map[string]string{}
	for _, op := range ops {
		if op.TaskID != "" && op.Tenant != "" && (op.Kind == OpSubmit && op.Outcome == OK || op.Fault == FaultDropResponse) {
			acked[op.TaskID] = op.Tenant
		}
	}
	s.progress("reading %d tenants' tasks through the store and the API", len(s.tenants))
	db, err := ReadStore(ctx, st, s.tenants, acked)
	if err != nil {
		return fmt.Errorf("read the store: %w", err)
	}
	want := map[string]string{}
	for id, tv := range db {
		want[id] = tv.Task.Tenant
	}
	clients := map[string]*client.Client{}
	for _, tc := range s.direct {
		clients[tc.tenant] = tc.via[0]
	}
	api, err := ReadAPI(ctx, s.opts.Clock, clients, want)
	if err != nil {
		return fmt.Errorf("read the API: %w", err)
	}
	execs, err := ReadExecLogs(filepath.Join(s.dir, "exec"), s.tenants)
	if err != nil {
		return fmt.Errorf("read the execution logs: %w", err)
	}
	if err := s.writeHistory(); err != nil {
		return err
	}
	inFlight := map[string]int{}
	for _, t := range s.tenants {
		ten, err := st.GetTenant(ctx, t)
		if err != nil {
			return fmt.Errorf("read tenant %s: %w", t, err)
		}
		inFlight[t] = ten.InFlight
	}
	logs, err := s.readLogs()
	if err != nil {
		return fmt.Errorf("read the server logs: %w", err)
	}
	s.rep.Result = Check(&CheckInput{Ops: ops, Snapshot: Snapshot{Store: db, API: api}, Execs: execs,
		Limits: s.limits, NodesStayUp: s.stayUp, Logs: logs, UnfinishedAtDrain: s.unfinished, DrainTimeout: s.opts.DrainTimeout, TenantInFlight: inFlight})
	verdict := "no anomaly"
	if n := s.rep.Result.AnomalyCount(); n > 0 {
		verdict = fmt.Sprintf("%d ANOMALIES", n)
	}
	s.progress("checked %d tasks: %s", s.rep.Result.Tasks, verdict)
	return nil
}

// readLogs returns each server's log lines so far (its stderr, every start
// of it; the lines it printed on stdout are left out).
func (s *scenarioRun) readLogs() (map[string][]string, error) {
	out := map[string][]string{}
	for _, n := range s.nodes {
		b, err := os.ReadFile(filepath.Join(s.dir, "node-"+n.Name+".log"))
		if err != nil {
			return nil, err
		}
		for _, line := range strings.Split(string(b), "\n") {
			if line != "" && !strings.HasPrefix(line, stdoutPrefix(n.Name)) {
				out[n.Name] = append(out[n.Name], line)
			}
		}
	}
	return out, nil
}

// heal ends every fault: frozen nodes resume, dead ones start, PostgreSQL
// runs, proxies forward.
func (s *scenarioRun) heal() error {
	// Healing runs even when the run was interrupted: PostgreSQL is never
	// left stopped.
	ctx := context.Background()
	var errs []error
	if s.pg != nil && !s.pg.accepts(ctx) {
		if err := s.pg.Start(context.Background()); err != nil {
			errs = append(errs, err)
		} else {
			s.hist.Fault(FaultPGStart)
		}
	}
	if s.proxy != nil {
		s.proxy.Heal()
	}
	if s.dropper != nil {
		s.dropper.SetRate(0)
	}
	for _, n := range s.nodes {
		if err := n.Resume(); err != nil {
			errs = append(errs, err)
		}
		if !n.Running() {
			if err := n.Start(context.Background()); err != nil {
				errs = append(errs, err)
			} else {
				s.hist.Fault(FaultStart + " " + n.Name)
			}
		}
	}
	return errors.Join(errs...)
}

// drain waits until no task of the run's tenants is queued or running, or
// the drain timeout passes; then it notes the tasks still unfinished (the
// check reports them stuck, whatever becomes of them later).
func (s *scenarioRun) drain(ctx context.Context, st store.Store) error {
	start := s.opts.Clock.Now()
	deadline := start.Add(s.opts.DrainTimeout)
	for {
		left := map[string]dockettype.State{}
		failed := false
		for _, t := range s.tenants {
			for _, state := range []dockettype.State{dockettype.StateQueued, dockettype.StateRunning} {
				ids, err := listState(ctx, st, t, state)
				if err != nil {
					failed = true // the database may still be recovering from the faults
				}
				for _, id := range ids {
					left[id] = state
				}
			}
		}
		if len(left) == 0 && !failed {
			s.progress("drained in %.1f s", s.opts.Clock.Since(start).Seconds())
			return nil
		}
		if s.opts.Clock.Now().After(deadline) {
			s.progress("%d tasks still unfinished %s after the faults healed", len(left), s.opts.DrainTimeout)
			for id, state := range left {
				if _, ok := s.unfinished[id]; !ok {
					s.unfinished[id] = state
				}
			}
			return nil
		}
		if err := sleep(ctx, s.opts.Clock, 250*time.Millisecond); err != nil {
			return err
		}
	}
}

// listState lists (up to 500 of) a tenant's tasks in one state.
func listState(ctx context.Context, st store.Store, tenant string, state dockettype.State) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	page, err := st.ListTasks(ctx, &store.ListTasksParams{Tenant: tenant, State: state, Limit: 500})
	ids := make([]string, len(page))
	for i, t := range page {
		ids[i] = t.ID
	}
	return ids, err
}

// resolve replays every key the load used, straight to a node: a key that
// was answered must name the same task again; a key never answered shows
// whether its indeterminate submits committed (200) or not (201: a new
// task, which the next drain finishes; 429: refused, nothing bound).
func (s *scenarioRun) resolve(ctx context.Context, wl *workload) error {
	keys := wl.keys()
	s.progress("replaying %d keys", len(keys))
	direct := map[string]*client.Client{}
	for _, tc := range s.direct {
		direct[tc.tenant] = tc.via[0]
	}
	type job struct {
		k tenantKey
		p *client.SubmitParams
	}
	jobs := make(chan job)
	var wg sync.WaitGroup
	for range readers {
		wg.Go(func() {
			for j := range jobs {
				// Every fault is healed: a key left without a definite
				// answer for a minute is a finding of its own (and its task,
				// if any, one no answer explains).
				give := s.opts.Clock.Now().Add(time.Minute)
				for try := 1; ; try++ {
					op := wl.submit(ctx, -1, direct[j.k.tenant], j.k.tenant, j.p, PhaseResolve)
					if op.Outcome != Indeterminate || ctx.Err() != nil || s.opts.Clock.Now().After(give) {
						break
					}
					_ = sleep(ctx, s.opts.Clock, min(time.Duration(try)*200*time.Millisecond, 2*time.Second))
				}
			}
		})
	}
	for k, p := range keys {
		jobs <- job{k, p}
	}
	close(jobs)
	wg.Wait()
	return ctx.Err()
}

func (s *scenarioRun) faultCounts() map[string]int {
	out := map[string]int{}
	for _, op := range s.hist.Ops() {
		if op.Kind == OpFault {
			name, _, _ := strings.Cut(op.Fault, " ")
			out[name]++
		}
	}
	return out
}

func (s *scenarioRun) writeHistory() error {
	f, err := os.OpenFile(filepath.Join(s.dir, "history.jsonl"), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if err := s.hist.WriteJSON(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// teardown stops the servers and proxies; PostgreSQL is left running.
func (s *scenarioRun) teardown() {
	if s.pg != nil && !s.pg.accepts(context.Background()) {
		_ = s.pg.Start(context.Background())
	}
	if s.proxy != nil {
		s.proxy.Heal()
	}
	var wg sync.WaitGroup
	for _, n := range s.nodes {
		wg.Go(func() { _ = n.Stop(15 * time.Second) })
	}
	wg.Wait()
	if s.proxy != nil {
		_ = s.proxy.Close()
	}
	if s.dropper != nil {
		_ = s.dropper.Close()
	}
	for _, f := range s.logFiles {
		_ = f.Close()
	}
}

// freeAddr returns a loopback address with a port free right now.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// withHostPort returns the postgres:// URL db pointing at addr instead.
func withHostPort(db, addr string) (string, error) {
	u, err := url.Parse(db)
	if err != nil {
		return "", errors.New("the --db URL does not parse")
	}
	u.Host = addr
	q := u.Query()
	if q.Has("host") || q.Has("port") {
		q.Del("host")
		q.Del("port")
		u.RawQuery = q.Encode()
	}
	return u.String(), nil
}

func randBetween(rng *mrand.Rand, lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(rng.Int64N(int64(hi-lo)))
}

func (s *scenarioRun) sleepBetween(ctx context.Context, rng *mrand.Rand, lo, hi time.Duration) error {
	return sleep(ctx, s.opts.Clock, randBetween(rng, lo, hi))
}

// redactOutput keeps a command's output short and free of credentials (the
// admin commands print the database string redacted already).
func redactOutput(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 500 {
		s = s[:500] + "…"
	}
	return redactKey(s)
}
