package queue

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/leasetoken"
	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/storefailure"
	"github.com/docket-dev/docket/internal/tracing"
)

// ClaimRemote claims up to req.Max ready tasks of the named remote
// workflows for a remote worker, through the same store claim as the
// node's pools: the same fair tenant dispatch within each workflow's
// queue, the same lease TTL, capacity already counted at admission. A key
// that serves one tenant claims only that tenant's tasks. With nothing to
// claim it waits up to req.Wait for a submission (on this node, or on
// another through the store's notifications), re-trying at the poll
// interval so that delayed tasks that come due are seen too.
func (s *Service) ClaimRemote(ctx context.Context, req *RemoteClaimRequest) (*RemoteClaimResult, error) {
	queues, err := s.remoteQueues(ctx, req)
	if err != nil {
		return nil, err
	}
	limit := req.Max
	if limit == 0 {
		limit = 1
	}
	st, key, err := s.remote(ctx)
	if err != nil {
		return nil, err
	}
	s.workers.saw(&req.Worker, req.Workflows, -1, s.clock.Now())
	res := &RemoteClaimResult{LeaseTTL: s.cfg.LeaseTTL, HeartbeatInterval: s.heartbeatInterval()}
	var (
		until  = s.clock.Now().Add(req.Wait)
		wake   <-chan struct{}
		cancel = func() {}
	)
	defer func() { cancel() }()
	for {
		if req.Wait > 0 && wake == nil {
			// Subscribe before claiming, so that a submit between a claim
			// that found nothing and the wait is not missed.
			wake, cancel = s.wakeups.subscribe(queues)
		}
		claimed, retryAt, err := s.claimQueues(ctx, st, key, &req.Worker, queues, limit)
		res.Tasks = append(res.Tasks, claimed...)
		if ctx.Err() != nil && len(res.Tasks) > 0 {
			// The worker went away: it will never see these leases.
			s.handBack(st, res.Tasks)
			return nil, ctx.Err()
		}
		if err != nil && len(res.Tasks) == 0 {
			return nil, err
		}
		left := until.Sub(s.clock.Now())
		if len(res.Tasks) > 0 || err != nil || left <= 0 {
			return res, nil
		}
		wait := min(left, s.cfg.PollInterval)
		if !retryAt.IsZero() {
			// A rate limit held tasks back: claim again when it has
			// starts to give.
			wait = min(wait, max(retryAt.Sub(s.clock.Now()), time.Millisecond))
		}
		timer := s.clock.NewTimer(wait)
		select {
		case <-wake:
		case <-timer.Chan():
		case <-ctx.Done():
			timer.Stop()
			return res, nil
		case <-s.draining.done():
			timer.Stop()
			return res, nil
		}
		timer.Stop()
	}
}

// handBack releases tasks claimed for a worker that went away before the
// answer (attempt not charged, queued again at once).
func (s *Service) handBack(st remoteStore, tasks []RemoteTask) {
	items := make([]store.FinishItem, len(tasks))
	for i, t := range tasks {
		items[i] = store.FinishItem{Lease: store.Lease{TaskID: t.Task.ID, Epoch: t.Task.LeaseEpoch},
			Kind: store.FinishRelease, Code: dockettype.CodeShutdown}
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.QueryTimeout)
	defer cancel()
	if _, err := st.Finish(ctx, &store.FinishParams{Now: s.clock.Now(), Items: items}); err != nil {
		storefailure.Count(s.metrics.StoreErrors, "finish", err)
		s.log.WarnContext(ctx, "claimed tasks of a worker that went away not handed back; their leases lapse",
			append(storefailure.Attrs(err), "count", len(items))...)
		return
	}
	for _, t := range tasks {
		s.wake(store.RemoteQueue(t.Task.Pool, t.Task.Workflow))
	}
}

// remoteQueues checks a claim request and returns the queues it names:
// each workflow's queue in the pool asked, or in both pools.
func (s *Service) remoteQueues(ctx context.Context, req *RemoteClaimRequest) ([]store.Queue, error) {
	invalid := func(msg string) error { return dockettype.NewError(dockettype.CodeInvalidRequest, msg) }
	switch {
	case len(req.Workflows) == 0 || len(req.Workflows) > MaxClaimWorkflows:
		return nil, invalid(fmt.Sprintf("workflows must name 1 to %d remote workflows", MaxClaimWorkflows))
	case req.Max < 0 || req.Max > MaxClaimTasks:
		return nil, invalid(fmt.Sprintf("max must be between 1 and %d", MaxClaimTasks))
	case req.Wait < 0 || req.Wait > MaxWait:
		return nil, invalid(fmt.Sprintf("wait_ms must be between 0 and %d", MaxWait.Milliseconds()))
	case req.Pool != "" && !req.Pool.Valid():
		return nil, invalid(`pool must be "online" or "offline"`)
	}
	pools := dockettype.Pools
	if req.Pool != "" {
		pools = []dockettype.Pool{req.Pool}
	}
	var queues []store.Queue
	for _, wf := range req.Workflows {
		res, err := s.runtime.Resolve(ctx, wf)
		if err != nil {
			if de, ok := err.(*dockettype.Error); ok {
				return nil, de
			}
			return nil, s.storeFailure(ctx, "resolve_workflow", err)
		}
		if !res.Remote {
			return nil, dockettype.NewError(dockettype.CodeUnknownWorkflow,
				fmt.Sprintf("workflow %q runs inside the server; only remote workflows can be claimed", wf))
		}
		for _, p := range pools {
			if q := store.RemoteQueue(p, wf); !slices.Contains(queues, q) {
				queues = append(queues, q)
			}
		}
	}
	return queues, nil
}

// claimQueues claims up to limit tasks from queues, starting at a random
// one so that no workflow of a worker always goes first. retryAt, when
// set, is the earliest time a rate limit that held tasks back has starts
// again.
func (s *Service) claimQueues(ctx context.Context, st remoteStore, key []byte, w *RemoteWorker,
	queues []store.Queue, limit int) (out []RemoteTask, retryAt time.Time, _ error) {
	first := rand.IntN(len(queues))
	for i := range queues {
		if len(out) >= limit {
			break
		}
		q := queues[(first+i)%len(queues)]
		// Not cut short when the worker hangs up: a claim whose commit
		// reached the database commits anyway; ClaimRemote hands back
		// what the worker will never see.
		qctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.QueryTimeout)
		now := s.clock.Now()
		var outcome store.ClaimOutcome
		claimed, err := st.Claim(qctx, &store.ClaimParams{Now: now, Queue: q, Tenant: w.claimTenant(), Owner: w.ID,
			Limit: limit - len(out), LeaseTTL: s.cfg.LeaseTTL, Outcome: &outcome})
		cancel()
		if err != nil {
			return out, retryAt, s.storeFailure(ctx, "claim", err)
		}
		if !outcome.RetryAt.IsZero() && (retryAt.IsZero() || outcome.RetryAt.Before(retryAt)) {
			retryAt = outcome.RetryAt
		}
		pool := string(q.Pool())
		s.metrics.Claims.WithLabelValues(pool).Add(float64(len(claimed)))
		if outcome.Throttled > 0 {
			s.metrics.ThrottledClaims.WithLabelValues(pool).Inc()
		}
		s.spans.queueWaits(claimed, now, true)
		for _, c := range claimed {
			if c.Task.Attempt == 1 {
				s.metrics.StartLatency.WithLabelValues(pool).Observe(now.Sub(c.Task.CreatedAt).Seconds())
			}
			out = append(out, RemoteTask{
				Lease: leasetoken.Sign(key, w.KeyID, leasetoken.Claims{TaskID: c.Task.ID, Tenant: c.Task.Tenant, Pool: pool,
					Epoch: c.Task.LeaseEpoch, Attempt: c.Task.Attempt, MaxAttempts: c.Task.MaxAttempts, TraceID: c.Task.TraceID,
					TraceUnsampled: c.TraceUnsampled}),
				Task:        c.Task,
				Input:       c.Input,
				Traceparent: tracing.Traceparent(c.Task.TraceID, c.Task.ID, !c.TraceUnsampled),
			})
		}
	}
	return out, retryAt, nil
}
