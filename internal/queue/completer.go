package queue

import (
	"context"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/metrics"
	"github.com/docket-dev/docket/internal/startstop"
	"github.com/docket-dev/docket/internal/store"
)

// completer writes attempt outcomes in batches: it takes whatever outcomes
// are waiting (up to FinishBatch) and applies them, each fenced by its
// lease, in one transaction. When the store is down it retries with backoff;
// meanwhile the tasks stay running and, if the outage outlasts their leases,
// recovery re-queues them, so nothing is lost.
type completer struct {
	svc  *Service
	in   chan *finishRequest
	loop startstop.Loop
}

type finishRequest struct {
	item     store.FinishItem
	pool     dockettype.Pool
	workflow string
	traceID  string
	tenant   string
}

func newCompleter(s *Service) *completer {
	return &completer{svc: s, in: make(chan *finishRequest, 4*s.cfg.FinishBatch)}
}

func (c *completer) Start(ctx context.Context) error { return c.loop.Start(ctx, c.run) }
func (c *completer) Stop()                           { c.loop.Stop() }

// enqueue hands an outcome over. It blocks only when FinishBatch×4 outcomes
// are already waiting (back-pressure on the workers).
func (c *completer) enqueue(r *finishRequest) { c.in <- r }

func (c *completer) run(ctx context.Context) {
	batch := make([]*finishRequest, 0, c.svc.cfg.FinishBatch)
	for {
		batch = batch[:0]
		select {
		case <-ctx.Done():
			c.drain()
			return
		case r := <-c.in:
			batch = append(batch, r)
		}
		batch = c.fill(batch)
		c.flush(ctx, batch)
	}
}

func (c *completer) fill(batch []*finishRequest) []*finishRequest {
	for len(batch) < cap(batch) {
		select {
		case r := <-c.in:
			batch = append(batch, r)
		default:
			return batch
		}
	}
	return batch
}

// drain flushes what is left at shutdown, with one bounded attempt.
func (c *completer) drain() {
	batch := c.fill(make([]*finishRequest, 0, c.svc.cfg.FinishBatch))
	for len(batch) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), c.svc.cfg.QueryTimeout)
		c.apply(ctx, batch)
		cancel()
		batch = c.fill(batch[:0])
	}
}

// flush applies a batch, retrying store failures with capped exponential
// backoff until it succeeds or the service begins to stop. Once stopping it
// tries once per batch and moves on, so that workers handing over outcomes
// never wait on a store that is down: the outcomes it could not write are
// dropped, their leases lapse, and recovery runs those tasks again.
func (c *completer) flush(ctx context.Context, batch []*finishRequest) {
	delay := 50 * time.Millisecond
	for {
		qctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.svc.cfg.QueryTimeout)
		ok := c.apply(qctx, batch)
		cancel()
		if ok {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-c.svc.drainingC():
			return
		case <-c.svc.clock.After(delay):
		}
		delay = min(2*delay, 5*time.Second)
	}
}

func (c *completer) apply(ctx context.Context, batch []*finishRequest) bool {
	s := c.svc
	items := make([]store.FinishItem, len(batch))
	for i, r := range batch {
		items[i] = r.item
	}
	res, err := s.store.Finish(ctx, &store.FinishParams{Now: s.clock.Now(), Items: items})
	if err != nil {
		s.metrics.StoreErrors.WithLabelValues("finish").Inc()
		s.log.WarnContext(ctx, "finish failed", "code", dockettype.CodeStoreUnavailable, "batch", len(batch))
		return false
	}
	for i, r := range batch {
		if !res[i].Applied {
			s.metrics.FencingRejections.WithLabelValues("finish").Inc()
			s.log.InfoContext(ctx, "late result fenced", "code", dockettype.CodeStaleLease,
				"task_id", r.item.TaskID, "trace_id", r.traceID)
			continue
		}
		switch r.item.Kind {
		case store.FinishRetry:
			s.metrics.Retries.WithLabelValues(string(r.pool), metrics.CodeLabel(r.item.Code)).Inc()
		default:
			s.metrics.TerminalOutcomes.WithLabelValues(string(r.pool), string(res[i].State)).Inc()
			s.logFailed(ctx, r, res[i].State)
			s.waiters.notify(r.item.TaskID)
		}
	}
	return true
}
