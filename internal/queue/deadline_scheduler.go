package queue

import (
	"context"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// DeadlineScheduler times out queued and running tasks past their deadline:
// each becomes timed_out with its epoch bumped (so a late result is fenced
// out), and a running worker on this node is cancelled at once. Workers on
// other nodes stop at their own context deadline or at their next refused
// heartbeat.
type DeadlineScheduler struct {
	scheduler
}

func newDeadlineScheduler(s *Service) *DeadlineScheduler {
	d := &DeadlineScheduler{}
	d.scheduler = scheduler{name: "deadline", svc: s, interval: s.cfg.DeadlineInterval, tick: d.tick}
	return d
}

func (d *DeadlineScheduler) tick(ctx context.Context) error {
	s := d.svc
	for ctx.Err() == nil {
		qctx, cancel := d.query(ctx)
		found, err := d.store.FindOverdue(qctx, &store.FindOverdueParams{Now: s.clock.Now(), Limit: s.cfg.ScanBatch})
		cancel()
		if err != nil || len(found) == 0 {
			return err
		}
		qctx, cancel = d.query(ctx)
		expired, err := d.store.ExpireTasks(qctx, &store.ExpireTasksParams{Now: s.clock.Now(), Items: found})
		cancel()
		if err != nil {
			return err
		}
		for _, e := range expired {
			s.metrics.DeadlineTimeouts.WithLabelValues(string(e.State)).Inc()
			s.metrics.TerminalOutcomes.WithLabelValues(string(e.Pool), string(dockettype.StateTimedOut)).Inc()
			if e.State == dockettype.StateRunning {
				s.leases.stop(e.Lease, errTimedOut)
			}
			s.waiters.notify(e.TaskID)
		}
		if len(expired) > 0 {
			d.log.InfoContext(ctx, "timed out overdue tasks", "code", dockettype.CodeDeadlineExceeded, "count", len(expired))
		}
		if len(found) < s.cfg.ScanBatch {
			return nil
		}
	}
	return ctx.Err()
}
