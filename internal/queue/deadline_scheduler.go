package queue

import (
	"context"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/metrics"
	"github.com/docket-dev/docket/internal/store"
)

// overdueExpirer is the store calls the deadline scheduler makes.
type overdueExpirer interface {
	FindOverdue(ctx context.Context, params *store.FindOverdueParams) ([]store.OverdueTask, error)
	ExpireTasks(ctx context.Context, params *store.ExpireTasksParams) ([]store.OverdueTask, error)
}

// DeadlineScheduler times out queued and running tasks past their deadline:
// each becomes timed_out with its epoch bumped (so a late result is fenced
// out), and a running worker on this node is cancelled at once. Workers on
// other nodes stop at their own context deadline or at their next refused
// heartbeat. A tick takes at most ScanBatches batches, with a pause between
// two.
type DeadlineScheduler struct {
	schedulerLoop
	store   overdueExpirer
	leases  *leaseRegistry
	waiters *waiters
	scan    scanConfig
}

func newDeadlineScheduler(base baseService, cfg schedulerConfig, scan scanConfig, st overdueExpirer,
	leases *leaseRegistry, w *waiters, m *metrics.Metrics, sig *schedulerSignals) *DeadlineScheduler {
	d := &DeadlineScheduler{store: st, leases: leases, waiters: w, scan: scan}
	d.schedulerLoop = newSchedulerLoop(base, cfg, m, sig, d.tick)
	return d
}

func (d *DeadlineScheduler) tick(ctx context.Context) error {
	return d.batches(ctx, d.scan, d.batch)
}

func (d *DeadlineScheduler) batch(ctx context.Context) (more bool, err error) {
	qctx, cancel := d.query(ctx)
	found, err := d.store.FindOverdue(qctx, &store.FindOverdueParams{Now: d.clock.Now(), Limit: d.scan.Batch})
	cancel()
	if err != nil || len(found) == 0 {
		return false, err
	}
	qctx, cancel = d.query(ctx)
	expired, err := d.store.ExpireTasks(qctx, &store.ExpireTasksParams{Now: d.clock.Now(), Items: found})
	cancel()
	if err != nil {
		return false, err
	}
	for _, e := range expired {
		d.metrics.DeadlineTimeouts.WithLabelValues(string(e.State)).Inc()
		d.metrics.TerminalOutcomes.WithLabelValues(string(e.Queue.Pool()), string(dockettype.StateTimedOut)).Inc()
		if e.State == dockettype.StateRunning {
			d.leases.stop(e.Lease, errTimedOut)
		}
		d.waiters.notify(e.TaskID)
	}
	if len(expired) > 0 {
		d.log.InfoContext(ctx, "timed out overdue tasks", "code", dockettype.CodeDeadlineExceeded, "count", len(expired))
	}
	return len(found) == d.scan.Batch, nil
}
