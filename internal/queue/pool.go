package queue

import (
	"context"
	"sync"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/startstop"
	"github.com/docket-dev/docket/internal/store"
)

// pool runs one pool's tasks on this node: a claim loop that keeps up to
// Workers tasks running, woken at once by local submissions and by a
// fallback poll otherwise. Each pool has its own workers, claim loop, wake
// channel and store fork, so a flood in one pool cannot delay the other.
type pool struct {
	svc     *Service
	name    dockettype.Pool
	workers int
	store   store.Store

	wakeC  chan struct{} // buffered(1): a pending wake-up
	freedC chan struct{} // buffered(1): a worker slot was freed

	mu      sync.Mutex
	running int
	tasks   sync.WaitGroup

	// taskCtx parents every task context; cancelled when the grace period
	// after Stop ends.
	taskCtx    context.Context
	taskCancel context.CancelCauseFunc

	loop startstop.Loop
}

func newPool(s *Service, name dockettype.Pool, cfg PoolConfig) *pool {
	return &pool{
		svc:     s,
		name:    name,
		workers: cfg.Workers,
		wakeC:   make(chan struct{}, 1),
		freedC:  make(chan struct{}, 1),
	}
}

func (p *pool) Start(ctx context.Context) error {
	if p.workers == 0 {
		return nil
	}
	// Task contexts outlive the claim loop's context during the grace
	// period, so they do not derive from ctx's cancellation.
	p.taskCtx, p.taskCancel = context.WithCancelCause(context.WithoutCancel(ctx))
	return p.loop.Start(ctx, p.run)
}

// Stop stops claiming, waits up to ShutdownGrace for running tasks, then
// cancels the rest and waits for them to return.
func (p *pool) Stop() {
	if !p.loop.Running() {
		return
	}
	p.loop.Stop()
	done := make(chan struct{})
	go func() {
		p.tasks.Wait()
		close(done)
	}()
	timer := p.svc.clock.NewTimer(p.svc.cfg.ShutdownGrace)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.Chan():
		p.taskCancel(errShutdown)
		<-done
	}
	p.taskCancel(errShutdown)
}

func (p *pool) wake() {
	select {
	case p.wakeC <- struct{}{}:
	default:
	}
}

func (p *pool) free() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.workers - p.running
}

func (p *pool) run(ctx context.Context) {
	log := p.svc.log.With("pool", p.name)
	for ctx.Err() == nil {
		n := p.free()
		if n <= 0 {
			select {
			case <-p.freedC:
			case <-ctx.Done():
			}
			continue
		}
		limit := min(n, p.svc.cfg.ClaimBatch)
		claimed, err := p.claim(ctx, limit)
		if err != nil {
			if ctx.Err() == nil {
				p.svc.metrics.StoreErrors.WithLabelValues("claim").Inc()
				log.WarnContext(ctx, "claim failed", "code", dockettype.CodeStoreUnavailable)
			}
			p.idle(ctx)
			continue
		}
		for _, c := range claimed {
			p.startTask(c)
		}
		if len(claimed) == limit {
			continue // there may be more ready work
		}
		p.idle(ctx)
	}
}

// idle waits for a wake-up, the poll interval, or the end.
func (p *pool) idle(ctx context.Context) {
	timer := p.svc.clock.NewTimer(p.svc.cfg.PollInterval)
	defer timer.Stop()
	select {
	case <-p.wakeC:
	case <-timer.Chan():
	case <-ctx.Done():
	}
}

func (p *pool) claim(ctx context.Context, limit int) ([]*store.ClaimedTask, error) {
	qctx, cancel := context.WithTimeout(ctx, p.svc.cfg.QueryTimeout)
	defer cancel()
	now := p.svc.clock.Now()
	claimed, err := p.store.Claim(qctx, &store.ClaimParams{
		Now: now, Pool: p.name, Owner: p.svc.cfg.NodeID, Limit: limit, LeaseTTL: p.svc.cfg.LeaseTTL,
	})
	if err != nil {
		return nil, err
	}
	p.svc.metrics.Claims.WithLabelValues(string(p.name)).Add(float64(len(claimed)))
	for _, c := range claimed {
		if c.Task.Attempt == 1 {
			p.svc.metrics.StartLatency.WithLabelValues(string(p.name)).Observe(now.Sub(c.Task.CreatedAt).Seconds())
		}
	}
	return claimed, nil
}

func (p *pool) startTask(c *store.ClaimedTask) {
	p.mu.Lock()
	p.running++
	p.mu.Unlock()
	p.tasks.Add(1)
	ctx, cancel := context.WithCancelCause(p.taskCtx)
	p.svc.leases.add(c.Lease(), cancel)
	go func() {
		defer p.tasks.Done()
		defer p.release()
		defer cancel(nil)
		p.svc.execute(ctx, c)
	}()
}

func (p *pool) release() {
	p.mu.Lock()
	p.running--
	p.mu.Unlock()
	select {
	case p.freedC <- struct{}{}:
	default:
	}
}
