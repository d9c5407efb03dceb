//go:build unix

package faultcheck

import (
	"context"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/docket-dev/docket/client"
	"github.com/docket-dev/docket/dockettype"
)

// ScenarioRemote runs the load in remote worker processes and injects
// faults into them and their connections.
const ScenarioRemote = "remote"

// Remote workers of the scenario: processes, and slots each.
const (
	remoteWorkers     = 3
	remoteWorkerSlots = 4
)

// remoteScenario runs every task in remote worker processes (`docket
// faultcheck-worker`: the probe in a Go SDK worker) instead of the
// server's pools. The workflow is registered through the admin API and the
// workers hold one worker key for every tenant. They reach the server
// through a TCP proxy, then an HTTP proxy (ResponseDropper) that drops a
// fifth of the committed finish answers. Every 0.3–1.5 s a worker is
// killed with SIGKILL (and started again 0–1 s later), or frozen
// (SIGSTOP) past its leases' TTL and thawed, or the proxy resets all its
// connections or one, or stalls them for 0.5 s to TTL + 1 s: the cuts land
// in long-polled claims, heartbeats and finishes. The server itself stays
// up; the checks are the same as for in-process runs, the workers logging
// their executions as the servers' probe does.
type remoteScenario struct {
	proxy   *TCPProxy
	dropper *ResponseDropper
	workers []*Node
}

func newRemote() Scenario { return &remoteScenario{} }

func (*remoteScenario) Name() string { return ScenarioRemote }

func (*remoteScenario) Needs(string) string { return "" }

func (s *remoteScenario) Setup(_ context.Context, r *rig) error {
	r.workflow = RemoteProbeWorkflow
	return r.addNode(nodeConfig{})
}

// started registers the remote workflow through the admin API, makes the
// worker key, puts the proxies in front of the server and starts the
// workers; the load starts after it.
func (s *remoteScenario) started(ctx context.Context, r *rig) error {
	tenant := r.tenants[0]
	adminKey, err := r.admin(ctx, "keys", "create", "--db", r.opts.DB, "--tenant", tenant, "--principal", "faultcheck-admin", "--role", "admin")
	if err != nil {
		return err
	}
	admin := client.New("http://"+r.nodes[0].Addr, strings.TrimSpace(adminKey))
	if err := admin.Call(ctx, http.MethodPut, "/v1/admin/workflows/"+RemoteProbeWorkflow,
		map[string]any{"pool": dockettype.PoolOnline}, nil); err != nil {
		return fmt.Errorf("register %s through the admin API: %w", RemoteProbeWorkflow, err)
	}
	workerKey, err := r.admin(ctx, "keys", "create", "--db", r.opts.DB, "--tenant", tenant, "--principal", "faultcheck-workers", "--role", "worker", "--all-tenants")
	if err != nil {
		return err
	}
	keyFile := filepath.Join(r.dir, "worker.key")
	if err := os.WriteFile(keyFile, []byte(strings.TrimSpace(workerKey)), 0o600); err != nil {
		return err
	}
	if s.dropper, err = NewResponseDropper("http://"+r.nodes[0].Addr, r.hist, nil, r.seed); err != nil {
		return err
	}
	if s.proxy, err = NewTCPProxy(strings.TrimPrefix(s.dropper.URL(), "http://"), r.opts.Clock); err != nil {
		return err
	}
	for i := range remoteWorkers {
		name := fmt.Sprintf("w%d", i+1)
		logf, err := os.OpenFile(filepath.Join(r.dir, "worker-"+name+".log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return err
		}
		r.logFiles = append(r.logFiles, logf)
		w := &Node{Name: name, bin: r.opts.Binary, sub: "faultcheck-worker", ready: RemoteWorkerReady, log: logf, clock: r.opts.Clock,
			args: []string{"--url", "http://" + s.proxy.Addr(), "--key-file", keyFile, "--exec-dir", r.execDir(),
				"--slots", fmt.Sprint(remoteWorkerSlots), "--id", name}}
		if err := w.Start(ctx); err != nil {
			return err
		}
		s.workers = append(s.workers, w)
	}
	r.note(fmt.Sprintf("%d remote worker processes of %d slots each run every task, through a TCP proxy and an HTTP proxy that drops committed finish answers", remoteWorkers, remoteWorkerSlots))
	return nil
}

func (s *remoteScenario) Inject(ctx context.Context, r *rig, rng *mrand.Rand) error {
	ttl := r.opts.LeaseTTL
	s.dropper.SetFinishRate(0.2)
	defer s.dropper.SetFinishRate(0)
	for {
		if r.sleepBetween(ctx, rng, 300*time.Millisecond, 1500*time.Millisecond) != nil {
			return nil
		}
		w := s.workers[rng.IntN(len(s.workers))]
		switch x := rng.Float64(); {
		case x < 0.2:
			r.hist.Fault(FaultKill + " " + w.Name)
			if err := w.Kill(); err != nil {
				return err
			}
			_ = r.sleepBetween(context.Background(), rng, 0, time.Second)
			if err := w.Start(context.Background()); err != nil {
				return err
			}
			r.hist.Fault(FaultStart + " " + w.Name)
		case x < 0.35:
			// Frozen past its leases: they lapse and are recovered; what it
			// writes once thawed must be fenced.
			if err := w.Pause(); err != nil {
				return err
			}
			r.hist.Fault(FaultPause + " " + w.Name)
			_ = r.sleepBetween(context.Background(), rng, ttl+ttl/2, 2*ttl)
			if err := w.Resume(); err != nil {
				return err
			}
			r.hist.Fault(FaultResume + " " + w.Name)
		case x < 0.6:
			s.proxy.ResetAll()
			r.hist.Fault(FaultResetAll)
		case x < 0.8:
			s.proxy.ResetOne(rng.IntN(1 << 20))
			r.hist.Fault(FaultResetOne)
		default:
			d := randBetween(rng, 500*time.Millisecond, ttl+time.Second)
			s.proxy.Stall(d)
			r.hist.Fault(FaultStall)
			if sleep(ctx, r.opts.Clock, d) != nil {
				return nil
			}
			if rng.IntN(2) == 0 {
				s.proxy.ResetAll()
				r.hist.Fault(FaultResetAll)
			}
		}
	}
}

// Heal makes the proxies forward everything and thaws or starts every
// worker, so that the drain has all of them.
func (s *remoteScenario) Heal(r *rig) error {
	if s.proxy != nil {
		s.proxy.Heal()
	}
	if s.dropper != nil {
		s.dropper.SetFinishRate(0)
		r.note(fmt.Sprintf("%d finish answers dropped after their outcomes committed", s.dropper.DroppedFinishes()))
	}
	var errs []error
	for _, w := range s.workers {
		if err := w.Resume(); err != nil {
			errs = append(errs, err)
		}
		if !w.Running() {
			if err := w.Start(context.Background()); err != nil {
				errs = append(errs, err)
			} else {
				r.hist.Fault(FaultStart + " " + w.Name)
			}
		}
	}
	return errors.Join(errs...)
}

// Close stops the workers, then the proxies.
func (s *remoteScenario) Close(*rig) {
	var wg sync.WaitGroup
	for _, w := range s.workers {
		wg.Go(func() { _ = w.Stop(10 * time.Second) })
	}
	wg.Wait()
	if s.proxy != nil {
		_ = s.proxy.Close()
	}
	if s.dropper != nil {
		_ = s.dropper.Close()
	}
}
