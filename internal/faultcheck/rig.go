//go:build unix

package faultcheck

import (
	"bytes"
	"cmp"
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

	"github.com/docket-dev/docket/client"
	"github.com/docket-dev/docket/dockettype"
)

// rig is the run of one scenario: its tenants, servers, clients, history
// and report. The scenario lays it out (Setup) and injects the faults;
// the rig does the rest the same way for every scenario (exercise).
type rig struct {
	opts     Options
	sc       Scenario
	name     string
	postgres bool
	seed     uint64
	rep      *Report
	dir      string
	hist     *History

	tenants []string
	keys    map[string]string // tenant → API key
	limits  Limits
	nodes   []*Node
	// endpoints are the base URLs the load talks to; nil: the nodes
	// themselves. A scenario's Setup may put a proxy in front.
	endpoints []string
	direct    []*tenantClients // each tenant through the first node, no proxy
	via       []*tenantClients // each tenant through the endpoints
	// stayUp says that no node is killed, frozen, stopped or cut off: set
	// by the scenarios that inject other faults.
	stayUp bool
	// workflow is the load's workflow; "": ProbeWorkflow. The remote
	// scenario sets its remote one.
	workflow string
	logFiles []io.Closer
	// unfinished are the tasks still queued or running when a drain's
	// bound passed.
	unfinished map[string]dockettype.State
}

func (r *rig) progress(format string, a ...any) {
	fmt.Fprintf(r.opts.Progress, "faultcheck: %s: %s\n", r.name, fmt.Sprintf(format, a...))
}

// note adds a line to the scenario's report.
func (r *rig) note(line string) { r.rep.Notes = append(r.rep.Notes, line) }

func (r *rig) run(ctx context.Context) {
	defer r.teardown()
	if err := r.setup(ctx); err != nil {
		r.rep.Error = err.Error()
		r.progress("error: %s", err)
		return
	}
	if err := r.exercise(ctx); err != nil {
		r.rep.Error = err.Error()
		r.progress("error: %s", err)
	}
}

// execDir holds the execution logs of the run's servers.
func (r *rig) execDir() string { return filepath.Join(r.dir, "exec") }

// setup makes the tenants and keys, lets the scenario lay out its servers
// and proxies, starts the servers and makes the clients.
func (r *rig) setup(ctx context.Context) error {
	r.dir = filepath.Join(r.opts.WorkDir, r.name)
	if err := os.MkdirAll(r.execDir(), 0o700); err != nil {
		return err
	}
	r.rep.Dir = r.dir

	var suffix [3]byte
	_, _ = rand.Read(suffix[:])
	run := hex.EncodeToString(suffix[:])
	r.keys = map[string]string{}
	r.limits = Limits{PoolCapacity: poolCapacity, Tenants: map[string]int{}}
	for _, tl := range tenantLimits {
		tenant := fmt.Sprintf("fc-%s-%s-%s", r.name, run, tl.suffix)
		key, err := r.admin(ctx, "keys", "create", "--db", r.opts.DB, "--tenant", tenant, "--principal", "faultcheck", "--default-tenant-limit", "0")
		if err != nil {
			return err
		}
		if _, err := r.admin(ctx, "tenants", "set-limits", "--db", r.opts.DB, "--tenant", tenant, "--max-in-flight", fmt.Sprint(tl.limit)); err != nil {
			return err
		}
		r.tenants = append(r.tenants, tenant)
		r.keys[tenant] = strings.TrimSpace(key)
		r.limits.Tenants[tenant] = tl.limit
	}

	if err := r.sc.Setup(ctx, r); err != nil {
		return err
	}
	if len(r.nodes) == 0 {
		return fmt.Errorf("scenario %s runs no server", r.name)
	}
	r.rep.Nodes = len(r.nodes)
	for _, n := range r.nodes {
		if err := n.Start(ctx); err != nil {
			return err
		}
	}
	if sc, ok := r.sc.(startedScenario); ok {
		if err := sc.started(ctx, r); err != nil {
			return err
		}
	}
	if r.endpoints == nil {
		for _, n := range r.nodes {
			r.endpoints = append(r.endpoints, "http://"+n.Addr)
		}
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}}
	for _, t := range r.tenants {
		tc := &tenantClients{tenant: t}
		for _, e := range r.endpoints {
			tc.via = append(tc.via, client.New(e, r.keys[t], client.WithHTTPClient(hc)))
		}
		r.via = append(r.via, tc)
		r.direct = append(r.direct, &tenantClients{tenant: t, via: []*client.Client{client.New("http://"+r.nodes[0].Addr, r.keys[t])}})
	}
	return nil
}

// startedScenario is a scenario with more to set up once its servers run
// (through their API), before the load starts.
type startedScenario interface {
	started(ctx context.Context, r *rig) error
}

// admin runs a docket admin command and returns its stdout.
func (r *rig) admin(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, r.opts.Binary, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("docket %s %s: %v: %s", args[0], args[1], err, redactOutput(stderr.Bytes()))
	}
	return string(out), nil
}

// nodeConfig is how a scenario wants one of its servers run; the zero
// value is the default server.
type nodeConfig struct {
	db          string        // the database string it is given (a proxy's); default Options.DB
	grace       time.Duration // --shutdown-grace; default 2s
	clockOffset time.Duration // serve's hidden --clock-offset; default none
	offline     int           // --offline-workers; default 1
	leaseTTL    time.Duration // --lease-ttl (heartbeats, recovery and deadlines scale with it); default Options.LeaseTTL
}

// addNode prepares the run's next server (a, b, …) on a free loopback
// port; setup starts it.
func (r *rig) addNode(cfg nodeConfig) error {
	name := string(rune('a' + len(r.nodes)))
	if cfg.db == "" {
		cfg.db = r.opts.DB
	}
	if cfg.grace == 0 {
		cfg.grace = 2 * time.Second
	}
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	logf, err := os.OpenFile(filepath.Join(r.dir, "node-"+name+".log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	r.logFiles = append(r.logFiles, logf)
	ttl := cmp.Or(cfg.leaseTTL, r.opts.LeaseTTL)
	args := []string{
		"--db", cfg.db, "--listen", addr, "--mode", "demo",
		"--lease-ttl", ttl.String(), "--heartbeat-interval", (ttl / 3).String(),
		"--recovery-interval", (ttl / 6).String(), "--deadline-interval", (ttl / 6).String(),
		"--online-workers", fmt.Sprint(nodeWorkers), "--offline-workers", fmt.Sprint(max(cfg.offline, 1)),
		"--online-capacity", fmt.Sprint(poolCapacity), "--default-timeout", "2m", "--shutdown-grace", cfg.grace.String(),
		"--faultcheck-probe", r.execDir(),
	}
	if cfg.clockOffset != 0 {
		args = append(args, "--clock-offset", cfg.clockOffset.String())
		r.note(fmt.Sprintf("node %s runs with its clock %s ahead", name, cfg.clockOffset))
	}
	r.nodes = append(r.nodes, &Node{Name: name, Addr: addr, bin: r.opts.Binary, args: args, log: logf, clock: r.opts.Clock})
	return nil
}

// terminate stops n gracefully: it marks the node's execution log (the
// executions that end after the mark ended during the shutdown), sends
// SIGTERM and waits up to bound for the process to exit. The history
// records the stop with the process's PID: OK if it exited by itself, with
// status 0, in time; failed (and killed) if not, which is an error of the
// run.
func (r *rig) terminate(n *Node, bound time.Duration) error {
	pid := n.PID()
	if pid == 0 {
		return fmt.Errorf("node %s is not running", n.Name)
	}
	if err := markTerm(r.execDir(), pid); err != nil {
		return err
	}
	i := r.hist.Invoke(Op{Process: -1, Kind: OpFault, Fault: FaultTerm + " " + n.Name, PID: pid})
	clean := n.Terminate(bound)
	r.hist.Complete(i, func(op *Op) {
		op.Outcome = OK
		if !clean {
			op.Outcome, op.Code = Failed, "unclean_exit"
		}
	})
	if !clean {
		return fmt.Errorf("node %s did not exit by itself with status 0 within %s of SIGTERM (see its log)", n.Name, bound)
	}
	return nil
}

// teardown stops the servers, then lets the scenario close what it set up.
func (r *rig) teardown() {
	var wg sync.WaitGroup
	for _, n := range r.nodes {
		wg.Go(func() { _ = n.Stop(15 * time.Second) })
	}
	wg.Wait()
	r.sc.Close(r)
	for _, f := range r.logFiles {
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

func (r *rig) sleepBetween(ctx context.Context, rng *mrand.Rand, lo, hi time.Duration) error {
	return sleep(ctx, r.opts.Clock, randBetween(rng, lo, hi))
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
