package queue

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/metrics"
	"github.com/docket-dev/docket/internal/startstop"
	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/storefailure"
)

// claimer is the store call a pool's claim loop makes.
type claimer interface {
	Claim(ctx context.Context, params *store.ClaimParams) ([]*store.ClaimedTask, error)
}

// pool runs one pool's tasks on this node: a claim loop that keeps up to
// Workers tasks running, woken at once by local submissions and by a
// fallback poll otherwise. Each pool has its own workers, claim loop,
// wake-up, completer and store fork, so a flood in one pool cannot delay
// the other.
type pool struct {
	baseService
	name    dockettype.Pool
	store   claimer
	worker  *worker
	metrics *metrics.Metrics
	spans   spans
	wakeup  *wakeup
	cfg     poolConfig

	idle    *testSignal[dockettype.Pool]
	grace   *testSignal[shutdownTimer]
	abandon *testSignal[shutdownTimer]

	freedC chan struct{} // buffered(1): a worker slot was freed

	// Worker goroutines outlive their task: one that finishes waits on
	// idleC for the next task launched, until quitC (made by Start,
	// closed by Stop) closes. A claim loop that starts a thousand tasks
	// then mostly hands them to waiting goroutines instead of creating
	// them, and a goroutine's stack, once grown by a run, stays grown.
	idleC chan func()
	quitC chan struct{}

	mu      sync.Mutex
	running int // includes reserved
	tasks   sync.WaitGroup
	// spanning: writing the queue-wait spans of claimed tasks
	spanning sync.WaitGroup
	// reserved are worker slots held for a completer's hand-off (see
	// reserve); the pool takes none while its last claim found work it
	// could not take (drained false) or once it stops.
	reserved int
	drained  bool
	stopping bool
	settled  *sync.Cond // on mu: reserved went down

	// taskCtx parents every task context; cancelled when the grace period
	// after Stop ends.
	taskCtx    context.Context
	taskCancel context.CancelCauseFunc

	loop startstop.Loop
}

// poolConfig is the part of the Config a pool reads.
type poolConfig struct {
	NodeID          string
	Workers         int
	ClaimBatch      int
	LeaseTTL        time.Duration
	PollInterval    time.Duration
	QueryTimeout    time.Duration
	ShutdownGrace   time.Duration
	ShutdownAbandon time.Duration
}

func newPool(base baseService, name dockettype.Pool, st claimer, w *worker, m *metrics.Metrics, wake *wakeup,
	cfg poolConfig, sig *testSignals) *pool {
	p := &pool{
		baseService: base,
		name:        name,
		store:       st,
		worker:      w,
		metrics:     m,
		wakeup:      wake,
		cfg:         cfg,
		idle:        &sig.idle,
		grace:       &sig.grace,
		abandon:     &sig.abandon,
		freedC:      make(chan struct{}, 1),
		idleC:       make(chan func()),
	}
	p.settled = sync.NewCond(&p.mu)
	return p
}

func (p *pool) Start(ctx context.Context) error {
	if p.cfg.Workers == 0 {
		return nil
	}
	// Task contexts outlive the claim loop's context during the grace
	// period, so they do not derive from ctx's cancellation.
	p.taskCtx, p.taskCancel = context.WithCancelCause(context.WithoutCancel(ctx))
	p.quitC = make(chan struct{})
	p.mu.Lock()
	p.stopping, p.drained = false, false
	p.mu.Unlock()
	return p.loop.Start(ctx, p.run)
}

// Stop stops claiming and waits up to ShutdownGrace for running tasks; then
// it cancels the rest (their workers hand their leases back) and waits up to
// ShutdownAbandon more. A worker still running then ignores its context: it
// is abandoned and counted, and its lease lapses.
func (p *pool) Stop() {
	if !p.loop.Running() {
		return
	}
	p.loop.Stop() // no claim starts a task after this
	// Nor a hand-off, once those under way have started theirs (a
	// completer holds a reservation for one store call).
	p.mu.Lock()
	p.stopping = true
	for p.reserved > 0 {
		p.settled.Wait()
	}
	p.mu.Unlock()
	defer p.spanning.Wait()
	defer p.taskCancel(errShutdown)
	defer close(p.quitC) // idle workers exit; an abandoned one exits when its task returns
	if p.free() == p.cfg.Workers {
		return
	}
	done := make(chan struct{})
	go func() {
		p.tasks.Wait()
		close(done)
	}()
	if p.await(done, p.cfg.ShutdownGrace, p.grace) {
		return
	}
	p.taskCancel(errShutdown)
	if p.await(done, p.cfg.ShutdownAbandon, p.abandon) {
		return
	}
	p.mu.Lock()
	n := p.running
	p.mu.Unlock()
	p.metrics.WorkersAbandoned.WithLabelValues(string(p.name)).Add(float64(n))
	p.log.WarnContext(p.taskCtx, "workers ignored cancellation at shutdown; abandoned, their leases will lapse",
		"code", dockettype.CodeShutdown, "count", n)
}

// await waits for done for at most d on the clock.
func (p *pool) await(done <-chan struct{}, d time.Duration, armed *testSignal[shutdownTimer]) bool {
	select {
	case <-done:
		return true
	default:
	}
	timer := p.clock.NewTimer(d)
	defer timer.Stop()
	armed.signal(shutdownTimer{Pool: p.name, D: d})
	select {
	case <-done:
		return true
	case <-timer.Chan():
	}
	select { // both ready: done wins
	case <-done:
		return true
	default:
		return false
	}
}

func (p *pool) free() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cfg.Workers - p.running
}

func (p *pool) run(ctx context.Context) {
	for ctx.Err() == nil {
		n := p.free()
		if n <= 0 {
			select {
			case <-p.freedC:
			case <-ctx.Done():
			}
			continue
		}
		limit := min(n, p.cfg.ClaimBatch)
		claimedAt := p.clock.Now()
		claimed, outcome, err := p.claim(ctx, claimedAt, limit)
		if err != nil {
			// A claim cut short by Stop is no store error; any other is,
			// even one that comes back while stopping.
			if ctx.Err() == nil || !errors.Is(err, context.Canceled) {
				storefailure.Count(p.metrics.StoreErrors, "claim", err)
				p.log.WarnContext(ctx, "claim failed", storefailure.Attrs(err)...)
			}
			p.wait(ctx)
			continue
		}
		// Drained unless the claim stopped at its limit with ready work
		// left: ready work it did not take below its limit is held by
		// other transactions (another node's claim, a cancel), which
		// this pool's workers could not have run anyway. Set before the
		// tasks start: the first of them to finish may hand its key's
		// slot on.
		p.mu.Lock()
		p.drained = (len(claimed) < limit || !outcome.More) && outcome.RetryAt.IsZero()
		p.mu.Unlock()
		for _, c := range claimed {
			p.startTask(c)
		}
		p.queueWaits(claimed, claimedAt)
		if len(claimed) == limit {
			// There may be more ready work. (Not on More alone: ready
			// counts above what a claim could take, rows another
			// transaction holds, would spin the loop until it commits.)
			continue
		}
		if !outcome.RetryAt.IsZero() {
			// A rate limit held tasks back: try again when it has
			// starts to give, not after the whole poll interval.
			p.waitFor(ctx, outcome.RetryAt.Sub(p.clock.Now()))
			continue
		}
		p.wait(ctx)
	}
}

// wait idles until a wake-up, the poll interval, or the end.
func (p *pool) wait(ctx context.Context) { p.waitFor(ctx, p.cfg.PollInterval) }

// waitFor idles until a wake-up, d (at most the poll interval), or the end.
func (p *pool) waitFor(ctx context.Context, d time.Duration) {
	timer := p.clock.NewTimer(min(max(d, time.Millisecond), p.cfg.PollInterval))
	defer timer.Stop()
	p.idle.signal(p.name)
	select {
	case <-p.wakeup.c():
	case <-timer.Chan():
	case <-ctx.Done():
	}
}

// claim claims up to limit tasks at now, and says whether ready work may
// remain (More) and when a rate limit that held tasks back has starts
// again (RetryAt).
func (p *pool) claim(ctx context.Context, now time.Time, limit int) ([]*store.ClaimedTask, store.ClaimOutcome, error) {
	// Not cut short by Stop: a claim whose commit already reached the
	// database commits anyway, and its tasks must then run here (or be
	// handed back by the shutdown) rather than wait for their leases to
	// lapse. Stop waits for it, QueryTimeout at most.
	qctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.cfg.QueryTimeout)
	defer cancel()
	var outcome store.ClaimOutcome
	claimed, err := p.store.Claim(qctx, &store.ClaimParams{
		Now: now, Queue: store.PoolQueue(p.name), Owner: p.cfg.NodeID, Limit: limit, LeaseTTL: p.cfg.LeaseTTL,
		Outcome: &outcome,
	})
	if err != nil {
		return nil, store.ClaimOutcome{}, err
	}
	p.metrics.Claims.WithLabelValues(string(p.name)).Add(float64(len(claimed)))
	if outcome.Throttled > 0 {
		p.metrics.ThrottledClaims.WithLabelValues(string(p.name)).Inc()
	}
	for _, c := range claimed {
		if c.Task.Attempt == 1 {
			p.metrics.StartLatency.WithLabelValues(string(p.name)).Observe(now.Sub(c.Task.CreatedAt).Seconds())
		}
	}
	return claimed, outcome, nil
}

// startTask runs a claimed task on a worker goroutine.
func (p *pool) startTask(c *store.ClaimedTask) {
	p.mu.Lock()
	p.running++
	p.mu.Unlock()
	p.launch(c)
}

// reserve holds up to n free worker slots for a completer's hand-off
// (store.HandOff) and returns how many it holds. It holds none while the
// pool's last claim stopped at its limit with ready work left: then the
// tasks a finish frees go through the claims, which share workers fairly
// between tenants, rather than straight to this node's workers.
func (p *pool) reserve(n int) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopping || !p.drained || !p.loop.Running() {
		return 0
	}
	k := max(min(n, p.cfg.Workers-p.running), 0)
	p.running += k
	p.reserved += k
	return k
}

// handOff returns what a finish needs to start tasks for this node in
// the reserved slots.
func (p *pool) handOff(reserved int, now time.Time) *store.HandOff {
	return &store.HandOff{Queue: store.PoolQueue(p.name), Owner: p.cfg.NodeID, Expires: now.Add(p.cfg.LeaseTTL), Limit: reserved}
}

// handedOver runs the tasks a finish started in reserved slots (at its
// now) and frees the slots it did not fill.
func (p *pool) handedOver(reserved int, started []*store.ClaimedTask, at time.Time) {
	p.mu.Lock()
	p.reserved -= reserved
	p.running -= reserved - len(started)
	p.settled.Broadcast()
	p.mu.Unlock()
	if len(started) > 0 {
		p.metrics.Claims.WithLabelValues(string(p.name)).Add(float64(len(started)))
		p.metrics.HandOffs.WithLabelValues(string(p.name)).Add(float64(len(started)))
	}
	for _, c := range started {
		if c.Task.Attempt == 1 {
			p.metrics.StartLatency.WithLabelValues(string(p.name)).Observe(at.Sub(c.Task.CreatedAt).Seconds())
		}
		p.launch(c)
	}
	p.queueWaits(started, at)
	if reserved > len(started) {
		select {
		case p.freedC <- struct{}{}:
		default:
		}
	}
}

// queueWaits writes the spans of the tasks' waits in the queue, until
// their claim at claimedAt, on a goroutine of their own: not on the claim
// loop, which the spans of a thousand tasks would slow, nor on each task's
// worker, whose stack (new, or shrunk by the collector while it idled) the
// SDK's calls would grow, copying it, for every task.
func (p *pool) queueWaits(claimed []*store.ClaimedTask, claimedAt time.Time) {
	if !p.spans.on || len(claimed) == 0 {
		return
	}
	p.spanning.Go(func() { p.spans.queueWaits(claimed, claimedAt, false) })
}

// launch runs a task whose worker slot is counted in running: on an idle
// worker goroutine if one waits, on a new one otherwise.
func (p *pool) launch(c *store.ClaimedTask) {
	p.tasks.Add(1)
	run := p.worker.start(p.taskCtx, c)
	select {
	case p.idleC <- run:
	default:
		go p.serve(run, p.quitC)
	}
}

// serve runs run, then the tasks handed to it while it waits idle, until
// quit closes.
func (p *pool) serve(run func(), quit <-chan struct{}) {
	for {
		p.runTask(run)
		select {
		case run = <-p.idleC:
		case <-quit:
			return
		}
	}
}

func (p *pool) runTask(run func()) {
	defer p.tasks.Done()
	defer p.freeSlot()
	run()
}

func (p *pool) freeSlot() {
	p.mu.Lock()
	p.running--
	p.mu.Unlock()
	select {
	case p.freedC <- struct{}{}:
	default:
	}
}
