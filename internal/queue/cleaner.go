package queue

import (
	"context"
	"math"
	"time"

	"github.com/docket-dev/docket/internal/metrics"
	"github.com/docket-dev/docket/internal/store"
)

// finishedDeleter is the store call the cleaner makes.
type finishedDeleter interface {
	DeleteFinished(ctx context.Context, params *store.DeleteFinishedParams) (int, error)
}

// Cleaner deletes tasks that finished more than Retention ago, with their
// input, events, evidence and idempotency binding (the key can then be used
// again). It is a fourth independent scheduler: its own loop, timer and
// store fork. A tick deletes batches of ScanBatch tasks with a pause
// between two, so that no transaction holds the database for long, until
// nothing is left or the tick has run for its whole interval: unlike the
// recovery and deadline scans its work grows with the service's
// throughput (thousands of tasks finish every second), so a fixed number
// of batches per tick would let the finished tasks outgrow it.
type Cleaner struct {
	schedulerLoop
	store     finishedDeleter
	retention time.Duration
	scan      scanConfig
}

func newCleaner(base baseService, cfg schedulerConfig, scan scanConfig, retention time.Duration, st finishedDeleter,
	m *metrics.Metrics, sig *schedulerSignals) *Cleaner {
	scan.Batches = math.MaxInt // bounded by time instead (see tick)
	c := &Cleaner{store: st, retention: retention, scan: scan}
	c.schedulerLoop = newSchedulerLoop(base, cfg, m, sig, c.tick)
	return c
}

func (c *Cleaner) tick(ctx context.Context) error {
	end := c.clock.Now().Add(c.interval)
	return c.batches(ctx, c.scan, func(ctx context.Context) (bool, error) {
		more, err := c.batch(ctx)
		return more && c.clock.Now().Before(end), err
	})
}

func (c *Cleaner) batch(ctx context.Context) (more bool, err error) {
	qctx, cancel := c.query(ctx)
	defer cancel()
	n, err := c.store.DeleteFinished(qctx, &store.DeleteFinishedParams{Before: c.clock.Now().Add(-c.retention), Limit: c.scan.Batch})
	if err != nil {
		return false, err
	}
	c.metrics.TasksDeleted.Add(float64(n))
	return n == c.scan.Batch, nil
}
