package queue

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/metrics"
	"github.com/docket-dev/docket/internal/startstop"
	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/storefailure"
)

// finisher is the store call a completer makes.
type finisher interface {
	Finish(ctx context.Context, params *store.FinishParams) ([]store.FinishResult, error)
}

// completer writes one pool's attempt outcomes in batches: it takes
// whatever outcomes are waiting (up to FinishBatch) and applies them, each
// fenced by its lease, in one transaction. Each pool has its own completer
// and store fork, so a flood of offline outcomes cannot delay online ones.
//
// A worker's lease stays in the heartbeat registry until its outcome is
// written, so a write that lags (the store is slow or down) never lets the
// lease lapse and recovery run a finished task again. A transient store
// error (store.ErrUnavailable) is retried with backoff, at shutdown too
// (for up to ShutdownFlush); a permanent one isolates the bad item by
// splitting the batch, so one outcome that can never be written stalls no
// other: that one is dropped, its lease lapses, and recovery runs the task
// again (failing it with lease_lost once its attempts are spent).
type completer struct {
	baseService
	pool    dockettype.Pool
	store   finisher
	leases  *leaseRegistry
	waiters *waiters
	metrics *metrics.Metrics
	spans   spans
	// slots, when set, is the pool whose free workers a finish may start
	// the next tasks of the concurrency keys it frees in (store.HandOff).
	slots handOffSlots
	// draining fires when the service begins to stop: from then on the
	// pools start nothing, so a completer waiting to retry may take in
	// every outcome handed over (there are at most as many as workers)
	// and no worker blocks on a full hand-over.
	draining     *drainSignal
	batch        int
	queryTimeout time.Duration
	flushFor     time.Duration // how long the last drain retries what the store refused

	retrying *testSignal[dockettype.Pool]
	flushing *testSignal[time.Duration]
	written  *testSignal[outcome]
	holding  *testSignal[int]

	in chan *finishRequest
	// handoff orders enqueue against Stop: an enqueue holds it shared for
	// its send, Stop takes it exclusively to mark the completer stopped,
	// so every outcome handed over before that is in the channel when the
	// loop drains it, and none is handed over after.
	handoff sync.RWMutex
	stopped bool
	loop    startstop.Loop

	spanning sync.WaitGroup // writing the finish spans of written batches
}

// handOffSlots are the worker slots a completer's finishes may start
// tasks in: the pool's (see pool.reserve).
type handOffSlots interface {
	reserve(n int) int
	handOff(reserved int, now time.Time) *store.HandOff
	handedOver(reserved int, started []*store.ClaimedTask, at time.Time)
}

type finishRequest struct {
	item     store.FinishItem
	keyed    bool // the task has a concurrency key
	workflow string
	traceID  string
	tenant   string
	attempt  int
	handed   time.Time // when the worker handed it over (set when tracing)
	// unsampled: the task's trace is not sampled (its finish span follows)
	unsampled bool
}

// outcome is what a completer did with one finish request (tests wait on it).
type outcome struct {
	TaskID string
	Kind   store.FinishKind
	Status outcomeStatus
	State  dockettype.State // after the write, when written
}

type outcomeStatus int

const (
	outcomeApplied outcomeStatus = iota + 1 // written
	outcomeFenced                           // refused: the lease was no longer current
	outcomeDropped                          // never written (permanent error, or the service stopped)
)

// completerConfig sizes a completer.
type completerConfig struct {
	Batch        int
	QueryTimeout time.Duration
	FlushFor     time.Duration
}

func newCompleter(base baseService, pool dockettype.Pool, st finisher, leases *leaseRegistry, w *waiters,
	m *metrics.Metrics, draining *drainSignal, cfg completerConfig, sig *testSignals) *completer {
	return &completer{
		baseService:  base,
		pool:         pool,
		store:        st,
		leases:       leases,
		waiters:      w,
		metrics:      m,
		draining:     draining,
		batch:        cfg.Batch,
		queryTimeout: cfg.QueryTimeout,
		flushFor:     cfg.FlushFor,
		retrying:     &sig.retrying,
		flushing:     &sig.flushing,
		written:      &sig.outcome,
		holding:      &sig.holding,
		in:           make(chan *finishRequest, 4*cfg.Batch),
	}
}

func (c *completer) Start(ctx context.Context) error {
	c.handoff.Lock()
	defer c.handoff.Unlock()
	c.stopped = false
	return c.loop.Start(ctx, c.run)
}

// Stop refuses further outcomes, then writes every one already handed over
// (one attempt each: see drain) and returns. The service stops the pools
// first, so only an abandoned worker can still hand one over.
func (c *completer) Stop() {
	c.handoff.Lock()
	c.stopped = true
	c.handoff.Unlock()
	c.loop.Stop()
	c.spanning.Wait()
}

// enqueue hands an outcome over. It blocks only while FinishBatch×4
// outcomes are already waiting (back-pressure on this pool's workers; the
// loop keeps draining them, so Stop waits at most for that send). Once the
// completer has stopped it reports false and takes nothing: the caller's
// lease lapses and recovery runs the task again.
func (c *completer) enqueue(r *finishRequest) bool {
	c.handoff.RLock()
	defer c.handoff.RUnlock()
	if c.stopped || !c.loop.Running() {
		return false
	}
	c.in <- r
	return true
}

// run writes batches one at a time, except that outcomes of tasks with a
// concurrency key may be written beside the batch in flight once a quarter
// of a batch of them wait. A key's tasks run one after another, each
// started by the finish of the one before (store.HandOff), so their
// throughput is bound by the finish's latency, and a second write halves
// the wait. Why a quarter: a write costs its round trips and its commit
// whatever it holds, and a second write for whatever trickled in (often a
// single outcome, as the hand-offs of the write before reach their
// workers) made many small transactions, more work in all than the larger
// ones they delay (BENCHMARKS.md, "Flow control"). Other outcomes wait for
// the write in flight: for them a second write would split batches (less
// group commit) and take the connection the pool's claims use.
func (c *completer) run(ctx context.Context) {
	done := make(chan []*finishRequest) // a write ended, with what it left unwritten
	writing := 0
	var pending, unwritten []*finishRequest
	defer func() {
		for ; writing > 0; writing-- {
			unwritten = append(unwritten, <-done...)
		}
		c.drain(append(unwritten, pending...))
	}()
	keyed := 0 // outcomes of keyed tasks in pending
	for {
		if len(pending) > 0 && (writing == 0 || writing < keyedWrites && keyed >= max(c.batch/4, 1)) {
			n := min(len(pending), c.batch)
			batch := slices.Clone(pending[:n])
			pending = append(pending[:0], pending[n:]...)
			keyed = countKeyed(pending)
			writing++
			go func() { done <- c.flush(ctx, batch) }()
			continue
		}
		in := c.in
		if len(pending) >= c.batch {
			in = nil // a full batch waits: workers wait on the channel's buffer
		}
		c.holding.signal(len(pending))
		select {
		case <-ctx.Done():
			return
		case r := <-in:
			n := len(pending)
			pending = c.takeSome(append(pending, r))
			keyed += countKeyed(pending[n:])
		case left := <-done:
			writing--
			unwritten = append(unwritten, left...)
		}
	}
}

// keyedWrites is how many writes a completer runs at once when a quarter
// of a batch of outcomes of keyed tasks wait (see run).
const keyedWrites = 2

func countKeyed(rs []*finishRequest) int {
	n := 0
	for _, r := range rs {
		if r.keyed {
			n++
		}
	}
	return n
}

// takeSome adds what is waiting to pending, up to a batch.
func (c *completer) takeSome(pending []*finishRequest) []*finishRequest {
	for len(pending) < c.batch {
		select {
		case r := <-c.in:
			pending = append(pending, r)
		default:
			return pending
		}
	}
	return pending
}

// takeAll adds everything waiting to pending.
func (c *completer) takeAll(pending []*finishRequest) []*finishRequest {
	for {
		select {
		case r := <-c.in:
			pending = append(pending, r)
		default:
			return pending
		}
	}
}

// flush writes a batch, retrying transient failures with capped
// exponential backoff (on the clock) until every item is written or
// dropped. If the completer stops meanwhile it returns what is still
// unwritten, for drain.
func (c *completer) flush(ctx context.Context, batch []*finishRequest) (unwritten []*finishRequest) {
	delay := 50 * time.Millisecond
	for pending := batch; ; {
		pending = c.applyAll(ctx, pending)
		if len(pending) == 0 {
			return nil
		}
		c.retrying.signal(c.pool)
		var stopping bool
		if pending, stopping = c.backoff(ctx, delay, pending); stopping {
			return pending
		}
		delay = min(2*delay, 5*time.Second)
	}
}

// backoff waits d on the clock before a retry. Once the service drains it
// takes in, meanwhile, the outcomes workers hand over, so that no worker
// waits on a store that is down. It reports whether the completer stopped.
func (c *completer) backoff(ctx context.Context, d time.Duration, pending []*finishRequest) ([]*finishRequest, bool) {
	timer := c.clock.NewTimer(d)
	defer timer.Stop()
	draining := c.draining.done()
	var in <-chan *finishRequest // nil until draining: a worker's send waits for the loop
	for {
		select {
		case <-ctx.Done():
			return pending, true
		case <-timer.Chan():
			return pending, false
		case <-draining:
			in, draining = c.in, nil
		case r := <-in:
			pending = append(pending, r)
		}
	}
}

// drain writes what is left at shutdown: pending and every outcome handed
// over before Stop. What the store refuses for a passing reason is retried
// with backoff for up to flushFor on the clock, then given up (dropAll).
// Heartbeats still run meanwhile, so the leases of what waits here hold.
func (c *completer) drain(pending []*finishRequest) {
	ctx := context.Background()
	deadline := c.clock.Now().Add(c.flushFor)
	for delay := 50 * time.Millisecond; ; delay = min(2*delay, time.Second) {
		if pending = c.applyAll(ctx, c.takeAll(pending)); len(pending) == 0 {
			return
		}
		wait := min(delay, deadline.Sub(c.clock.Now()))
		if wait <= 0 {
			c.dropAll(ctx, pending)
			return
		}
		timer := c.clock.NewTimer(wait)
		c.flushing.signal(wait)
		<-timer.Chan()
	}
}

// applyAll writes items in batches of at most FinishBatch and returns
// those that failed transiently, in a new slice.
func (c *completer) applyAll(ctx context.Context, items []*finishRequest) (retry []*finishRequest) {
	for batch := range slices.Chunk(items, c.batch) {
		retry = append(retry, c.apply(ctx, batch)...)
	}
	return retry
}

// apply writes items and returns those that failed transiently (to retry).
// A permanent failure of a batch splits it in halves, recursively, so the
// items that can be written are, and an item that fails alone is dropped.
func (c *completer) apply(ctx context.Context, items []*finishRequest) (retry []*finishRequest) {
	err := c.write(ctx, items)
	switch {
	case err == nil:
		return nil
	case isTransient(err):
		storefailure.Count(c.metrics.StoreErrors, "finish", err)
		c.log.WarnContext(ctx, "finish failed; will retry", append(storefailure.Attrs(err), "batch", len(items))...)
		return items
	case len(items) == 1:
		storefailure.Count(c.metrics.StoreErrors, "finish", err)
		c.log.ErrorContext(ctx, "finish refused an outcome; dropped, its lease will lapse",
			append(storefailure.Attrs(err), "task_id", items[0].item.TaskID, "trace_id", items[0].traceID)...)
		c.drop(items[0], "invalid")
		return nil
	default:
		storefailure.Count(c.metrics.StoreErrors, "finish", err)
		c.log.WarnContext(ctx, "finish refused a batch; splitting it", append(storefailure.Attrs(err), "batch", len(items))...)
		half := len(items) / 2
		left := c.apply(ctx, items[:half])
		right := c.apply(ctx, items[half:])
		return append(slices.Clip(left), right...) // a new array: left aliases items

	}
}

// write applies items in one store call and, when it answers, settles each:
// its lease leaves the heartbeat registry only now that the outcome is
// durable (or fenced out).
func (c *completer) write(ctx context.Context, items []*finishRequest) error {
	qctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.queryTimeout)
	defer cancel()
	params := &store.FinishParams{Now: c.clock.Now(), Items: make([]store.FinishItem, len(items))}
	frees := 0 // outcomes that may free a key's slot
	for i, r := range items {
		params.Items[i] = r.item
		if r.keyed && r.item.Kind != store.FinishRetry && r.item.Kind != store.FinishRelease {
			frees++
		}
	}
	reserved := 0
	if frees > 0 && c.slots != nil {
		if reserved = c.slots.reserve(frees); reserved > 0 {
			params.HandOff = c.slots.handOff(reserved, params.Now)
		}
	}
	res, err := c.store.Finish(qctx, params)
	if reserved > 0 {
		var started []*store.ClaimedTask
		if err == nil {
			started = params.HandOff.Started
		}
		c.slots.handedOver(reserved, started, params.Now)
	}
	if err != nil {
		return err
	}
	if c.spans.on {
		// Off the loop: the next batch is not held up by this one's spans.
		now, written := c.clock.Now(), slices.Clone(items)
		c.spanning.Go(func() {
			b := newEndedBatch(len(written), 4)
			for i, r := range written {
				c.spans.finish(b, finishTask{traceID: r.traceID, attempt: r.attempt, unsampled: r.unsampled},
					&r.item, r.handed, now, res[i].Applied, res[i].State, trace.SpanContext{})
			}
			c.spans.write(b)
		})
	}
	for i, r := range items {
		c.leases.remove(r.item.Lease)
		if !res[i].Applied {
			c.metrics.FencingRejections.WithLabelValues("finish").Inc()
			c.log.InfoContext(ctx, "late result fenced", "code", dockettype.CodeStaleLease,
				"task_id", r.item.TaskID, "trace_id", r.traceID)
			c.written.signal(outcome{TaskID: r.item.TaskID, Kind: r.item.Kind, Status: outcomeFenced, State: res[i].State})
			continue
		}
		switch r.item.Kind {
		case store.FinishRetry:
			c.metrics.Retries.WithLabelValues(string(c.pool), metrics.CodeLabel(r.item.Code)).Inc()
		case store.FinishRelease:
			c.metrics.LeasesReleased.WithLabelValues(string(c.pool)).Inc()
		default:
			c.metrics.TerminalOutcomes.WithLabelValues(string(c.pool), string(res[i].State)).Inc()
			c.logFailed(ctx, r, res[i].State)
			c.waiters.notify(r.item.TaskID)
		}
		c.written.signal(outcome{TaskID: r.item.TaskID, Kind: r.item.Kind, Status: outcomeApplied, State: res[i].State})
	}
	return nil
}

// dropAll gives up on outcomes the service could not write before it
// stopped.
func (c *completer) dropAll(ctx context.Context, items []*finishRequest) {
	if len(items) == 0 {
		return
	}
	c.log.WarnContext(ctx, "outcomes not written at shutdown; their leases will lapse", "code", dockettype.CodeStoreUnavailable, "count", len(items))
	for _, r := range items {
		c.drop(r, "stopping")
	}
}

// drop gives up on an outcome: its lease leaves the heartbeat registry so
// that it lapses and recovery runs the task again.
func (c *completer) drop(r *finishRequest, reason string) {
	c.leases.remove(r.item.Lease)
	c.metrics.OutcomesDropped.WithLabelValues(string(c.pool), reason).Inc()
	c.written.signal(outcome{TaskID: r.item.TaskID, Kind: r.item.Kind, Status: outcomeDropped})
}

// isTransient reports whether a store error may go away by itself (the
// database is down, busy or slow). Anything else is a refusal that
// retrying cannot fix.
func isTransient(err error) bool {
	return errors.Is(err, store.ErrUnavailable) || errors.Is(err, store.ErrBusy) || errors.Is(err, context.DeadlineExceeded)
}
