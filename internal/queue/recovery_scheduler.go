package queue

import (
	"context"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// RecoveryScheduler returns tasks whose lease expired (their worker died or
// stopped heartbeating) to the queue, or fails them with lease_lost when
// their attempts are exhausted. Each batch is an indexed scan with a LIMIT
// on a read connection followed by a short fenced write.
type RecoveryScheduler struct {
	scheduler
}

func newRecoveryScheduler(s *Service) *RecoveryScheduler {
	r := &RecoveryScheduler{}
	r.scheduler = scheduler{name: "recovery", svc: s, interval: s.cfg.RecoveryInterval, tick: r.tick}
	return r
}

func (r *RecoveryScheduler) tick(ctx context.Context) error {
	s := r.svc
	for ctx.Err() == nil {
		qctx, cancel := r.query(ctx)
		found, err := r.store.FindExpiredLeases(qctx, &store.FindExpiredLeasesParams{Now: s.clock.Now(), Limit: s.cfg.ScanBatch})
		cancel()
		if err != nil || len(found) == 0 {
			return err
		}
		qctx, cancel = r.query(ctx)
		res, err := r.store.RecoverLeases(qctx, &store.RecoverLeasesParams{Now: s.clock.Now(), Items: found})
		cancel()
		if err != nil {
			return err
		}
		s.metrics.LeasesRecovered.WithLabelValues("requeued").Add(float64(res.Requeued))
		s.metrics.LeasesRecovered.WithLabelValues("failed").Add(float64(res.Failed))
		if res.Requeued+res.Failed > 0 {
			r.log.InfoContext(ctx, "recovered expired leases", "code", dockettype.CodeLeaseLost,
				"requeued", res.Requeued, "failed", res.Failed)
		}
		for _, l := range res.Recovered {
			// A worker on this node whose lease was recovered must stop.
			s.leases.stop(l, errLeaseLost)
			s.waiters.notify(l.TaskID)
		}
		if res.Requeued > 0 {
			s.wakeAll()
		}
		if len(found) < s.cfg.ScanBatch {
			return nil
		}
	}
	return ctx.Err()
}
