package queue

import (
	"context"
	"errors"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// HeartbeatScheduler renews the leases this node's workers hold, in
// batches, fenced by epoch. A refused renewal means the task was cancelled,
// timed out or recovered elsewhere: the worker's context is cancelled at once.
type HeartbeatScheduler struct {
	scheduler
}

func newHeartbeatScheduler(s *Service) *HeartbeatScheduler {
	h := &HeartbeatScheduler{}
	h.scheduler = scheduler{name: "heartbeat", svc: s, interval: s.cfg.HeartbeatInterval, tick: h.tick}
	return h
}

func (h *HeartbeatScheduler) tick(ctx context.Context) error {
	s := h.svc
	held := s.leases.snapshot()
	var firstErr error
	for len(held) > 0 {
		n := min(len(held), s.cfg.HeartbeatBatch)
		batch := held[:n]
		held = held[n:]
		qctx, cancel := h.query(ctx)
		refused, err := h.store.Heartbeat(qctx, &store.HeartbeatParams{Now: s.clock.Now(), LeaseTTL: s.cfg.LeaseTTL, Leases: batch})
		cancel()
		if err != nil {
			firstErr = errors.Join(firstErr, err)
			continue
		}
		for _, l := range refused {
			if s.leases.stop(l, errLeaseLost) {
				s.metrics.FencingRejections.WithLabelValues("heartbeat").Inc()
				h.log.InfoContext(ctx, "lease renewal refused; worker stopped", "code", dockettype.CodeStaleLease, "task_id", l.TaskID)
			}
		}
	}
	return firstErr
}
