package queue

import (
	"context"
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
// store fork; a tick deletes at most ScanBatches batches of ScanBatch
// tasks, with a pause between two, so that it never holds the database for
// long.
type Cleaner struct {
	schedulerLoop
	store     finishedDeleter
	retention time.Duration
	scan      scanConfig
}

func newCleaner(base baseService, cfg schedulerConfig, scan scanConfig, retention time.Duration, st finishedDeleter,
	m *metrics.Metrics, sig *schedulerSignals) *Cleaner {
	c := &Cleaner{store: st, retention: retention, scan: scan}
	c.schedulerLoop = newSchedulerLoop(base, cfg, m, sig, c.tick)
	return c
}

func (c *Cleaner) tick(ctx context.Context) error {
	return c.batches(ctx, c.scan, c.batch)
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
