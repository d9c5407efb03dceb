package queue

import (
	"context"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/metrics"
	"github.com/docket-dev/docket/internal/store"
)

// leaseRecoverer is the store calls the recovery scheduler makes.
type leaseRecoverer interface {
	FindExpiredLeases(ctx context.Context, params *store.FindExpiredLeasesParams) ([]store.ExpiredLease, error)
	RecoverLeases(ctx context.Context, params *store.RecoverLeasesParams) (store.RecoverResult, error)
}

// RecoveryScheduler returns tasks whose lease expired (their worker died or
// stopped heartbeating) to the queue, or fails them with lease_lost when
// their attempts are exhausted. Each batch is an indexed scan with a LIMIT
// on a read connection followed by a short fenced write; a tick takes at
// most ScanBatches batches, with a pause between two.
type RecoveryScheduler struct {
	schedulerLoop
	store   leaseRecoverer
	leases  *leaseRegistry
	waiters *waiters
	wakeups *queueWakeups // the claimers to wake when tasks are requeued
	scan    scanConfig
}

func newRecoveryScheduler(base baseService, cfg schedulerConfig, scan scanConfig, st leaseRecoverer,
	leases *leaseRegistry, w *waiters, wakeups *queueWakeups, m *metrics.Metrics, sig *schedulerSignals) *RecoveryScheduler {
	r := &RecoveryScheduler{store: st, leases: leases, waiters: w, wakeups: wakeups, scan: scan}
	r.schedulerLoop = newSchedulerLoop(base, cfg, m, sig, r.tick)
	return r
}

func (r *RecoveryScheduler) tick(ctx context.Context) error {
	return r.batches(ctx, r.scan, r.batch)
}

func (r *RecoveryScheduler) batch(ctx context.Context) (more bool, err error) {
	qctx, cancel := r.query(ctx)
	found, err := r.store.FindExpiredLeases(qctx, &store.FindExpiredLeasesParams{Now: r.clock.Now(), Limit: r.scan.Batch})
	cancel()
	if err != nil || len(found) == 0 {
		return false, err
	}
	qctx, cancel = r.query(ctx)
	res, err := r.store.RecoverLeases(qctx, &store.RecoverLeasesParams{Now: r.clock.Now(), Items: found})
	cancel()
	if err != nil {
		return false, err
	}
	r.metrics.LeasesRecovered.WithLabelValues("requeued").Add(float64(res.Requeued))
	r.metrics.LeasesRecovered.WithLabelValues("failed").Add(float64(res.Failed))
	if res.Requeued+res.Failed > 0 {
		r.log.InfoContext(ctx, "recovered expired leases", "code", dockettype.CodeLeaseLost,
			"requeued", res.Requeued, "failed", res.Failed)
	}
	for _, l := range res.Recovered {
		// A worker on this node whose lease was recovered must stop.
		r.leases.stop(l, errLeaseLost)
		r.waiters.notify(l.TaskID)
	}
	if res.Requeued > 0 {
		queues := map[store.Queue]bool{}
		for _, e := range found {
			queues[e.Queue] = true
		}
		for q := range queues {
			r.wakeups.wake(q)
		}
	}
	return len(found) == r.scan.Batch, nil
}
