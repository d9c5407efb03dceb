package queue

import (
	"context"
	"errors"
	"time"

	"github.com/docket-dev/docket/internal/metrics"
	"github.com/docket-dev/docket/internal/store"
)

// bulkActor is the store calls a bulk job's actions make.
type bulkActor interface {
	retrier
	CancelBatch(ctx context.Context, params *store.CancelBatchParams) ([]store.CancelBatchResult, error)
	DeleteTasks(ctx context.Context, params *store.DeleteTasksParams) ([]string, error)
}

// bulkStore is the store calls the bulk scheduler makes.
type bulkStore interface {
	bulkActor
	LeaseBulkJob(ctx context.Context, params *store.LeaseBulkJobParams) (*store.BulkJob, error)
	GetBulkJob(ctx context.Context, id string) (*store.BulkJob, error)
	AdvanceBulkJob(ctx context.Context, params *store.AdvanceBulkJobParams) (bool, error)
	MatchTasks(ctx context.Context, params *store.MatchTasksParams) ([]store.MatchedTask, error)
}

// bulkApplier applies a job's action to one batch (Service.applyBulk).
type bulkApplier func(ctx context.Context, st bulkActor, job *store.BulkJob, tasks []store.MatchedTask) (bulkCounts, error)

// bulkConfig bounds the bulk scheduler's work.
type bulkConfig struct {
	Owner     string        // this node, the lease owner
	LeaseTTL  time.Duration // a job's lease; renewed at every batch
	Batch     int           // tasks per batch
	BusyBatch int           // tasks per batch while the node admits submissions (Busy)
	Batches   int           // most batches per tick; the job's lease stays with this node for the next tick
	Pause     time.Duration // between two batches, so that admissions get their turn
	// Busy reports whether the node admitted a submission since the time
	// given.
	Busy func(since time.Time) bool
}

// busyWindow is how recent a submission makes the node busy for the bulk
// scheduler.
const busyWindow = time.Second

// BulkScheduler advances the bulk jobs (POST /v1/admin/bulk, POST
// /v1/tasks/bulk). Every node runs one and there is no leader: a tick
// leases the oldest running job no other node holds (store.BulkJobs), then
// runs its batches: the next tasks of its filter in ID order after its
// cursor, the action applied to them, and the cursor and counts recorded
// with a compare-and-set on the job's version that renews the lease. A
// cancelled job, or one another node took over after this one's lease
// expired, refuses the write and this node moves on.
//
// A batch's action commits before its cursor does. A job cancelled while a
// batch acts sees that batch through, uncounted. When a node dies in
// between, the node that takes the job over runs that batch again, and
// its tasks count as skipped (a retried task is queued by then, a
// cancelled or deleted one is no longer there to act on). A task retried
// in that batch that failed again meanwhile is retried a second time.
//
// A bulk job yields to submissions: while its node has admitted one in the
// last second, its batches are of BusyBatch tasks (100 by default, against
// 1,000), still Pause apart. A batch keeps a core of the database busy for
// as long as its statements run (about 40 ms for a thousand retried tasks
// on a 2-core machine), and a submission that arrives meanwhile waits for
// what is left of the machine; shorter batches spread that wait over every
// submission instead of doubling the unlucky ones'. Beside a steady stream
// of submissions the job takes about five times as long as alone
// (BENCHMARKS.md, "Bulk actions"). Only this node's submissions count.
type BulkScheduler struct {
	schedulerLoop
	store bulkStore
	apply bulkApplier
	cfg   bulkConfig
}

func newBulkScheduler(base baseService, cfg schedulerConfig, bc bulkConfig, st bulkStore, apply bulkApplier,
	m *metrics.Metrics, sig *schedulerSignals) *BulkScheduler {
	b := &BulkScheduler{store: st, apply: apply, cfg: bc}
	b.schedulerLoop = newSchedulerLoop(base, cfg, m, sig, b.tick)
	return b
}

func (b *BulkScheduler) tick(ctx context.Context) error {
	qctx, cancel := b.query(ctx)
	job, err := b.store.LeaseBulkJob(qctx, &store.LeaseBulkJobParams{Now: b.clock.Now(), Owner: b.cfg.Owner, TTL: b.cfg.LeaseTTL})
	cancel()
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	var ahead *matchAhead
	defer func() { ahead.stop() }()
	return b.batches(ctx, scanConfig{Batch: b.cfg.Batch, Batches: b.cfg.Batches, Pause: b.cfg.Pause},
		func(ctx context.Context) (bool, error) { return b.batch(ctx, job, &ahead) })
}

// batch runs one batch of job and records it; job's cursor and version
// move on with it.
// batch acts on the job's next batch. ahead is the batch after it being
// read, if any: the caller stops it when it calls no more batches.
func (b *BulkScheduler) batch(ctx context.Context, job *store.BulkJob, ahead **matchAhead) (more bool, err error) {
	// A job cancelled since the last batch stops before acting again (one
	// cancelled while a batch acts still sees that batch through).
	qctx, cancel := b.query(ctx)
	now, err := b.store.GetBulkJob(qctx, job.ID)
	cancel()
	if err != nil || now.Version != job.Version || now.State != store.BulkRunning {
		return false, err
	}
	var tasks []store.MatchedTask
	limit := b.batchSize()
	if a := *ahead; a != nil && a.after == job.Cursor {
		tasks, err = a.wait()
		limit = a.limit
	} else {
		a.stop()
		tasks, err = b.match(ctx, job, job.Cursor, limit)
	}
	*ahead = nil
	if err != nil {
		return false, err
	}
	last := len(tasks) < limit
	cursor := job.Cursor
	if len(tasks) > 0 {
		cursor = tasks[len(tasks)-1].TaskID
	}
	if !last {
		// The next batch's tasks are read while this one's are acted on.
		// They come after this one's in ID order, so the action leaves
		// them as read, but for what it changes besides its own tasks (a
		// cancel's dependents): such a task counts as skipped next batch.
		*ahead = b.matchAhead(ctx, job, cursor, b.batchSize())
	}
	counts, err := b.apply(ctx, b.store, job, tasks)
	if err != nil {
		return false, err
	}
	qctx, cancel = b.query(ctx)
	ok, err := b.store.AdvanceBulkJob(qctx, &store.AdvanceBulkJobParams{Now: b.clock.Now(), ID: job.ID, Version: job.Version,
		Owner: b.cfg.Owner, TTL: b.cfg.LeaseTTL, Cursor: cursor, Last: last,
		Matched: len(tasks), Done: counts.done, Skipped: counts.skipped, Failed: counts.failed})
	cancel()
	if err != nil || !ok {
		return false, err // !ok: cancelled or taken over; the job is no longer this node's
	}
	job.Version++
	job.Cursor = cursor
	job.Matched += len(tasks)
	job.Done += counts.done
	job.Skipped += counts.skipped
	job.Failed += counts.failed
	if last {
		b.log.InfoContext(ctx, "bulk job done", "job", job.ID, "matched", job.Matched, "done", job.Done,
			"skipped", job.Skipped, "failed", job.Failed)
	}
	return !last, nil
}

// batchSize is the size of the next batch: BusyBatch while the node admits
// submissions, Batch otherwise.
func (b *BulkScheduler) batchSize() int {
	if b.cfg.Busy(b.clock.Now().Add(-busyWindow)) {
		return b.cfg.BusyBatch
	}
	return b.cfg.Batch
}

// match reads the job's next batch of at most limit tasks after the cursor.
func (b *BulkScheduler) match(ctx context.Context, job *store.BulkJob, after string, limit int) ([]store.MatchedTask, error) {
	qctx, cancel := b.query(ctx)
	defer cancel()
	return b.store.MatchTasks(qctx, &store.MatchTasksParams{Filter: job.Filter, After: after, Limit: limit})
}

// matchAhead is a job's next batch being read.
type matchAhead struct {
	after  string // the cursor it reads after
	limit  int    // the batch's size
	cancel context.CancelFunc
	done   chan struct{}
	tasks  []store.MatchedTask
	err    error
}

// matchAhead starts reading the batch of at most limit tasks after the
// cursor.
func (b *BulkScheduler) matchAhead(ctx context.Context, job *store.BulkJob, after string, limit int) *matchAhead {
	ctx, cancel := context.WithCancel(ctx)
	m := &matchAhead{after: after, limit: limit, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		m.tasks, m.err = b.match(ctx, job, after, limit)
	}()
	return m
}

// wait returns the batch read.
func (m *matchAhead) wait() ([]store.MatchedTask, error) {
	<-m.done
	m.cancel()
	return m.tasks, m.err
}

// stop abandons the read, if any, and waits for it to end.
func (m *matchAhead) stop() {
	if m == nil {
		return
	}
	m.cancel()
	<-m.done
}
