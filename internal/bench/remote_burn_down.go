package bench

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/auth"
	"github.com/docket-dev/docket/internal/remote"
	"github.com/docket-dev/docket/worker"
)

// remoteBurnDown is the burn-down through the worker protocol: it
// registers RemoteWorkflow, admits Tasks tasks of it, serves the API on a
// loopback port, then starts the service and RemoteWorkers Go SDK workers
// (Slots each, each with its own connections) and times the drain until
// every task is terminal. The workers claim, heartbeat and finish over
// real HTTP, as workers on another machine would.
func (h *harness) remoteBurnDown(ctx context.Context) (*Result, error) {
	now := h.clock.Now()
	if _, _, err := h.remote.Register(ctx, now, remote.Registration{Name: RemoteWorkflow, Pool: dockettype.PoolOnline}); err != nil {
		return nil, fmt.Errorf("register the remote workflow: %w", err)
	}
	key, _, err := auth.CreateWorkerKey(ctx, h.st, now, h.tenants[0].Tenant, "bench-workers", true)
	if err != nil {
		return nil, fmt.Errorf("create a worker key: %w", err)
	}
	p, res, err := h.preload(ctx)
	if err != nil {
		return nil, err
	}
	baseURL, stopServing, err := h.serveAPI()
	if err != nil {
		return nil, err
	}
	defer stopServing()

	start := h.clock.Now()
	if err := h.start(ctx); err != nil {
		return nil, err
	}
	wctx, stopWorkers := context.WithCancel(ctx)
	var wg sync.WaitGroup
	errs := make([]error, h.opts.RemoteWorkers)
	for i := range h.opts.RemoteWorkers {
		w := worker.New(baseURL, key, worker.Options{
			Slots: h.opts.Slots, WorkerID: fmt.Sprintf("bench-%s-w%d", h.run, i+1), Wait: time.Second, Logger: h.opts.Logger,
			HTTPClient: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16, IdleConnTimeout: time.Minute}},
		})
		w.Handle(RemoteWorkflow, remoteNoop)
		wg.Go(func() { errs[i] = w.Run(wctx) })
	}
	res, err = h.drain(ctx, p, res, start)
	stopWorkers()
	h.svc.Drain() // the idle workers' long polls answer now
	wg.Wait()
	if err != nil {
		return nil, err
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	res.RemoteWorkers, res.Slots = h.opts.RemoteWorkers, h.opts.Slots
	return res, nil
}

// remoteNoop is the Go SDK workers' handler: it does nothing and succeeds.
func remoteNoop(context.Context, *worker.Task) (any, error) { return nil, nil }
