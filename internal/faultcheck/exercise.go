//go:build unix

package faultcheck

import (
	"context"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/docket-dev/docket/client"
	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// exercise runs the load under the scenario's faults, heals, drains,
// resolves every key and checks.
func (r *rig) exercise(ctx context.Context) error {
	r.progress("%s, %d node(s), load for %s, seed %d, work dir %s", storeKind(r.postgres), len(r.nodes), r.opts.Duration, r.opts.Seed, r.dir)
	wf := r.workflow
	if wf == "" {
		wf = ProbeWorkflow
	}
	wl := newWorkload(r.hist, r.via, "k", r.seed, wf)
	// The load window ends on the run's clock (context.WithTimeout would
	// end it on the real one).
	loadCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	window := r.opts.Clock.AfterFunc(r.opts.Duration, stopLoad)
	defer window.Stop()
	start := r.opts.Clock.Now()
	var injectErr error
	var wg sync.WaitGroup
	wg.Go(func() { injectErr = r.sc.Inject(loadCtx, r, mrand.New(mrand.NewPCG(r.seed, 0xfa17))) })
	wg.Go(func() {
		wl.run(loadCtx, r.opts.Clients)
		r.rep.LoadSeconds = r.opts.Clock.Since(start).Seconds()
	})
	wg.Wait()
	healErr := r.heal()
	r.rep.Faults = r.faultCounts()
	r.rep.StoreErrors = map[string]int{}
	for _, n := range r.nodes {
		_ = scrapeStoreErrors(ctx, "http://"+n.Addr, r.rep.StoreErrors)
	}
	if injectErr != nil {
		return fmt.Errorf("inject faults: %w", injectErr)
	}
	if healErr != nil {
		return fmt.Errorf("heal: %w", healErr)
	}
	r.progress("load done after %.1f s, faults healed after %.1f s: %d calls; faults %s",
		r.rep.LoadSeconds, r.opts.Clock.Since(start).Seconds(), len(r.hist.Ops()), formatCounts(r.rep.Faults))

	st, err := r.opts.OpenStore(ctx, r.opts.DB)
	if err != nil {
		return fmt.Errorf("open the store to check it: %w", err)
	}
	defer st.Close()
	if err := r.drain(ctx, st); err != nil {
		return err
	}
	if err := r.resolve(ctx, wl); err != nil {
		return err
	}
	if err := r.drain(ctx, st); err != nil {
		return err
	}

	ops := r.hist.Ops()
	acked := map[string]string{}
	for _, op := range ops {
		if op.TaskID != "" && op.Tenant != "" && (op.Kind == OpSubmit && op.Outcome == OK || op.Fault == FaultDropResponse) {
			acked[op.TaskID] = op.Tenant
		}
	}
	r.progress("reading %d tenants' tasks through the store and the API", len(r.tenants))
	db, err := ReadStore(ctx, st, r.tenants, acked)
	if err != nil {
		return fmt.Errorf("read the store: %w", err)
	}
	want := map[string]string{}
	for id, tv := range db {
		want[id] = tv.Task.Tenant
	}
	clients := map[string]*client.Client{}
	for _, tc := range r.direct {
		clients[tc.tenant] = tc.via[0]
	}
	api, err := ReadAPI(ctx, r.opts.Clock, clients, want)
	if err != nil {
		return fmt.Errorf("read the API: %w", err)
	}
	execs, err := ReadExecLogs(r.execDir(), r.tenants)
	if err != nil {
		return fmt.Errorf("read the execution logs: %w", err)
	}
	if err := r.writeHistory(); err != nil {
		return err
	}
	inFlight := map[string]int{}
	for _, t := range r.tenants {
		ten, err := st.GetTenant(ctx, t)
		if err != nil {
			return fmt.Errorf("read tenant %s: %w", t, err)
		}
		inFlight[t] = ten.InFlight
	}
	logs, err := r.readLogs()
	if err != nil {
		return fmt.Errorf("read the server logs: %w", err)
	}
	var scheds []ScheduleView
	if sc, ok := r.sc.(scheduleScenario); ok {
		if scheds, err = sc.collectSchedules(ctx, r, st); err != nil {
			return fmt.Errorf("read the schedules: %w", err)
		}
	}
	var deps *DependencyView
	if sc, ok := r.sc.(dependencyScenario); ok {
		if deps, err = sc.collectDependencies(ctx, r, st); err != nil {
			return fmt.Errorf("read the dependency graphs: %w", err)
		}
	}
	var flowView *FlowView
	if sc, ok := r.sc.(flowScenario); ok {
		if flowView, err = sc.collectFlow(ctx, r, st); err != nil {
			return fmt.Errorf("read the flow tasks: %w", err)
		}
	}
	r.rep.Result = Check(&CheckInput{Ops: ops, Snapshot: Snapshot{Store: db, API: api}, Execs: execs,
		Limits: r.limits, NodesStayUp: r.stayUp, Logs: logs, UnfinishedAtDrain: r.unfinished, DrainTimeout: r.opts.DrainTimeout, TenantInFlight: inFlight,
		Schedules: scheds, Dependencies: deps, Flow: flowView})
	verdict := "no anomaly"
	if n := r.rep.Result.AnomalyCount(); n > 0 {
		verdict = fmt.Sprintf("%d ANOMALIES", n)
	}
	r.progress("checked %d tasks: %s", r.rep.Result.Tasks, verdict)
	return nil
}

// scheduleScenario is a scenario that runs periodic schedules: after the
// drain it stops them and reads what they made, for checkSchedules.
type scheduleScenario interface {
	collectSchedules(ctx context.Context, r *rig, st store.Store) ([]ScheduleView, error)
}

// dependencyScenario is a scenario that submits dependency graphs: after
// the drain it reads them, for checkDependencies.
type dependencyScenario interface {
	collectDependencies(ctx context.Context, r *rig, st store.Store) (*DependencyView, error)
}

// flowScenario is a scenario that runs rate-limited, keyed work: after the
// drain it reads that work for checkFlow.
type flowScenario interface {
	collectFlow(ctx context.Context, r *rig, st store.Store) (*FlowView, error)
}

// heal ends every fault: the scenario's own first (PostgreSQL started,
// proxies forwarding), then frozen nodes resume and stopped ones start.
// It runs even when the run was interrupted, so nothing is left stopped.
func (r *rig) heal() error {
	var errs []error
	if err := r.sc.Heal(r); err != nil {
		errs = append(errs, err)
	}
	for _, n := range r.nodes {
		if err := n.Resume(); err != nil {
			errs = append(errs, err)
		}
		if !n.Running() {
			if err := n.Start(context.Background()); err != nil {
				errs = append(errs, err)
			} else {
				r.hist.Fault(FaultStart + " " + n.Name)
			}
		}
	}
	return errors.Join(errs...)
}

// readLogs returns each server's log lines so far (its stderr, every start
// of it; the lines it printed on stdout are left out).
func (r *rig) readLogs() (map[string][]string, error) {
	out := map[string][]string{}
	for _, n := range r.nodes {
		b, err := os.ReadFile(filepath.Join(r.dir, "node-"+n.Name+".log"))
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

// drain waits until no task of the run's tenants is queued or running, or
// the drain timeout passes; then it notes the tasks still unfinished (the
// check reports them stuck, whatever becomes of them later).
func (r *rig) drain(ctx context.Context, st store.Store) error {
	start := r.opts.Clock.Now()
	deadline := start.Add(r.opts.DrainTimeout)
	for {
		left := map[string]dockettype.State{}
		failed := false
		for _, t := range r.tenants {
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
			r.progress("drained in %.1f s", r.opts.Clock.Since(start).Seconds())
			return nil
		}
		if r.opts.Clock.Now().After(deadline) {
			r.progress("%d tasks still unfinished %s after the faults healed", len(left), r.opts.DrainTimeout)
			for id, state := range left {
				if _, ok := r.unfinished[id]; !ok {
					r.unfinished[id] = state
				}
			}
			return nil
		}
		if err := sleep(ctx, r.opts.Clock, 250*time.Millisecond); err != nil {
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
func (r *rig) resolve(ctx context.Context, wl *workload) error {
	keys := wl.keys()
	r.progress("replaying %d keys", len(keys))
	direct := map[string]*client.Client{}
	for _, tc := range r.direct {
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
				give := r.opts.Clock.Now().Add(time.Minute)
				for try := 1; ; try++ {
					op := wl.submit(ctx, -1, direct[j.k.tenant], j.k.tenant, j.p, PhaseResolve)
					if op.Outcome != Indeterminate || ctx.Err() != nil || r.opts.Clock.Now().After(give) {
						break
					}
					_ = sleep(ctx, r.opts.Clock, min(time.Duration(try)*200*time.Millisecond, 2*time.Second))
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

func (r *rig) faultCounts() map[string]int {
	out := map[string]int{}
	for _, op := range r.hist.Ops() {
		if op.Kind == OpFault {
			out[faultName(op.Fault)]++
		}
	}
	return out
}

func (r *rig) writeHistory() error {
	f, err := os.OpenFile(filepath.Join(r.dir, "history.jsonl"), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if err := r.hist.WriteJSON(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
