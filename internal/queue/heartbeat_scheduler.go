package queue

import (
	"context"
	"errors"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/metrics"
	"github.com/docket-dev/docket/internal/store"
)

// leaseRenewer is the store call the heartbeat scheduler makes.
type leaseRenewer interface {
	Heartbeat(ctx context.Context, params *store.HeartbeatParams) (refused []store.RefusedLease, err error)
}

// HeartbeatScheduler renews the leases this node holds, in batches, fenced
// by epoch: those of running workers and those whose outcome the completer
// has not yet written. A refused renewal means the task was cancelled,
// timed out or recovered elsewhere: the worker's context is cancelled at
// once. Every held lease is renewed each tick (no cap: a skipped lease
// would lapse).
type HeartbeatScheduler struct {
	schedulerLoop
	store    leaseRenewer
	leases   *leaseRegistry
	leaseTTL time.Duration
	batch    int
}

func newHeartbeatScheduler(base baseService, cfg schedulerConfig, leaseTTL time.Duration, batch int, st leaseRenewer,
	leases *leaseRegistry, m *metrics.Metrics, sig *schedulerSignals) *HeartbeatScheduler {
	h := &HeartbeatScheduler{store: st, leases: leases, leaseTTL: leaseTTL, batch: batch}
	h.schedulerLoop = newSchedulerLoop(base, cfg, m, sig, h.tick)
	return h
}

func (h *HeartbeatScheduler) tick(ctx context.Context) error {
	held := h.leases.snapshot()
	var firstErr error
	for len(held) > 0 {
		n := min(len(held), h.batch)
		batch := held[:n]
		held = held[n:]
		qctx, cancel := h.query(ctx)
		refused, err := h.store.Heartbeat(qctx, &store.HeartbeatParams{Now: h.clock.Now(), LeaseTTL: h.leaseTTL, Leases: batch})
		cancel()
		if err != nil {
			firstErr = errors.Join(firstErr, err)
			continue
		}
		for _, l := range refused {
			if h.leases.stop(l.Lease, errLeaseLost) {
				h.metrics.FencingRejections.WithLabelValues("heartbeat").Inc()
				h.log.InfoContext(ctx, "lease renewal refused; worker stopped", "code", dockettype.CodeStaleLease, "task_id", l.TaskID)
			}
		}
	}
	return firstErr
}
