package queue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// BulkRequest is a bulk action: cancel, retry or delete every task the
// filter matches. A member's filter is its own tenant's; an admin's may
// name a tenant or none (every tenant).
type BulkRequest struct {
	Action string           `json:"action"`
	Filter store.TaskFilter `json:"filter"`
}

// BulkJob is a bulk action's progress as the API shows it.
type BulkJob struct {
	ID         string            `json:"id"`
	Action     string            `json:"action"`
	Filter     store.TaskFilter  `json:"filter"`
	State      string            `json:"state"` // running, done, cancelled
	Matched    int               `json:"matched"`
	Done       int               `json:"done"`
	Skipped    int               `json:"skipped"`
	Failed     int               `json:"failed"`
	By         *dockettype.Actor `json:"by"`
	CreatedAt  time.Time         `json:"created_at"`
	UpdatedAt  time.Time         `json:"updated_at"`
	FinishedAt *time.Time        `json:"finished_at"`
}

func bulkView(j *store.BulkJob) *BulkJob {
	by := j.By
	return &BulkJob{ID: j.ID, Action: j.Action, Filter: j.Filter, State: j.State, Matched: j.Matched, Done: j.Done,
		Skipped: j.Skipped, Failed: j.Failed, By: &by, CreatedAt: j.CreatedAt, UpdatedAt: j.UpdatedAt, FinishedAt: j.FinishedAt}
}

// maxErrorCodeLen bounds a filter's error code (a code of the closed set,
// or a workflow's own).
const maxErrorCodeLen = 64

// StartBulk validates a bulk action and stores it as a running job, which
// the bulk scheduler of any node then advances in bounded batches. With
// asAdmin (the admin API) the filter may name any tenant or none;
// otherwise it is the principal's tenant's.
func (s *Service) StartBulk(ctx context.Context, p dockettype.Principal, asAdmin bool, req *BulkRequest) (*BulkJob, error) {
	invalid := func(msg string) error { return dockettype.NewError(dockettype.CodeInvalidRequest, msg) }
	f := req.Filter
	switch {
	case req.Action != store.BulkCancel && req.Action != store.BulkRetry && req.Action != store.BulkDelete:
		return nil, invalid(`action must be "cancel", "retry" or "delete"`)
	case f.State != "" && !f.State.Valid():
		return nil, invalid("filter.state: unknown state")
	case f.Pool != "" && !f.Pool.Valid():
		return nil, invalid(`filter.pool must be "online" or "offline"`)
	case f.Workflow != "" && !dockettype.ValidWorkflowName(f.Workflow):
		return nil, invalid("filter.workflow must be a workflow's name")
	case len(f.ErrorCode) > maxErrorCodeLen:
		return nil, invalid(fmt.Sprintf("filter.error_code must be at most %d bytes", maxErrorCodeLen))
	case f.Tenant != "" && len(f.Tenant) > 128:
		return nil, invalid("filter.tenant is too long")
	}
	if !asAdmin {
		if f.Tenant != "" && f.Tenant != p.Tenant {
			return nil, dockettype.NewError(dockettype.CodeForbidden, "a member's bulk action is limited to its own tenant")
		}
		f.Tenant = p.Tenant
	}
	id, err := uuid.NewV7()
	if err != nil {
		return nil, dockettype.NewError(dockettype.CodeInternal, "could not make a job id")
	}
	job := &store.BulkJob{ID: id.String(), Action: req.Action, Filter: f, By: actorOf(p), State: store.BulkRunning,
		Version: 1, CreatedAt: s.clock.Now()}
	qctx, cancel := s.query(ctx)
	defer cancel()
	if err := s.store.CreateBulkJob(qctx, job); err != nil {
		return nil, s.storeFailure(ctx, "create_bulk_job", err)
	}
	job.CreatedAt, job.UpdatedAt = job.CreatedAt.Truncate(time.Millisecond).UTC(), job.CreatedAt.Truncate(time.Millisecond).UTC()
	return bulkView(job), nil
}

// GetBulk returns a bulk job: with asAdmin any, otherwise only one of the
// principal's tenant (another is not_found).
func (s *Service) GetBulk(ctx context.Context, p dockettype.Principal, asAdmin bool, id string) (*BulkJob, error) {
	qctx, cancel := s.query(ctx)
	defer cancel()
	j, err := s.store.GetBulkJob(qctx, id)
	if err == nil && !asAdmin && j.Filter.Tenant != p.Tenant {
		err = store.ErrNotFound
	}
	if err != nil {
		return nil, s.bulkFailure(ctx, "get_bulk_job", err)
	}
	return bulkView(j), nil
}

// CancelBulk stops a running bulk job (the batch under way finishes); a
// finished one is returned as it is.
func (s *Service) CancelBulk(ctx context.Context, p dockettype.Principal, asAdmin bool, id string) (*BulkJob, error) {
	if _, err := s.GetBulk(ctx, p, asAdmin, id); err != nil {
		return nil, err
	}
	qctx, cancel := s.query(ctx)
	defer cancel()
	j, err := s.store.CancelBulkJob(qctx, id, s.clock.Now())
	if err != nil {
		return nil, s.bulkFailure(ctx, "cancel_bulk_job", err)
	}
	return bulkView(j), nil
}

func (s *Service) bulkFailure(ctx context.Context, op string, err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return dockettype.NewError(dockettype.CodeNotFound, "bulk job not found")
	}
	return s.storeFailure(ctx, op, err)
}

// DeadLetters groups the failed tasks by tenant, workflow and error code:
// with asAdmin every tenant's (or tenant's, when set), otherwise the
// principal's tenant's.
func (s *Service) DeadLetters(ctx context.Context, p dockettype.Principal, asAdmin bool, tenant string) ([]store.DeadLetterGroup, error) {
	if !asAdmin {
		tenant = p.Tenant
	}
	qctx, cancel := s.query(ctx)
	defer cancel()
	groups, err := s.store.DeadLetters(qctx, &store.DeadLettersParams{Tenant: tenant, Limit: 500})
	if err != nil {
		return nil, s.storeFailure(ctx, "dead_letters", err)
	}
	return groups, nil
}

// cancelMatched cancels a batch's live tasks in one store call, then does
// for each task cancelled what a single cancel does: counts it, stops its
// worker on this node, wakes its long polls. A task terminal by then, or
// gone, is skipped.
func (s *Service) cancelMatched(ctx context.Context, st bulkActor, tasks []store.MatchedTask) (bulkCounts, error) {
	var c bulkCounts
	items := make([]store.CancelItem, 0, len(tasks))
	for _, t := range tasks {
		if t.State.Terminal() {
			c.skipped++
			continue
		}
		items = append(items, store.CancelItem{Tenant: t.Tenant, TaskID: t.TaskID})
	}
	if len(items) == 0 {
		return c, nil
	}
	qctx, cancel := s.query(ctx)
	res, err := st.CancelBatch(qctx, &store.CancelBatchParams{Now: s.clock.Now(), Items: items})
	cancel()
	if err != nil {
		return c, s.storeFailure(ctx, "cancel", err)
	}
	for _, r := range res {
		if !r.Changed {
			c.skipped++
			continue
		}
		c.done++
		s.cancelled(r.Pool, r.From, r.Previous)
	}
	return c, nil
}

// bulkCounts is what one batch of a bulk job did.
type bulkCounts struct{ done, skipped, failed int }

// applyBulk applies a job's action to one batch of matched tasks through
// st (the bulk scheduler's fork), as the single-task calls do: a cancel
// stops the task's worker on this node, a retry is checked against
// capacity and limits like an admission. The error concerns the whole
// batch (the store failed): nothing of it is recorded, and the batch runs
// again.
func (s *Service) applyBulk(ctx context.Context, st bulkActor, job *store.BulkJob, tasks []store.MatchedTask) (bulkCounts, error) {
	var c bulkCounts
	switch job.Action {
	case store.BulkRetry:
		var todo []store.MatchedTask
		for _, t := range tasks {
			if retryable(t.State) {
				todo = append(todo, t)
			} else {
				c.skipped++
			}
		}
		if len(todo) == 0 {
			return c, nil
		}
		out, err := s.retryMatched(ctx, st, job.By, todo, true)
		if err != nil {
			return c, err
		}
		for _, o := range out {
			switch o.Outcome {
			case store.Retried:
				c.done++
			case store.NotRetryable, store.RetryNotFound:
				c.skipped++
			default:
				c.failed++
			}
		}
	case store.BulkCancel:
		return s.cancelMatched(ctx, st, tasks)
	case store.BulkDelete:
		ids := make([]string, 0, len(tasks))
		for _, t := range tasks {
			if t.State.Terminal() {
				ids = append(ids, t.TaskID)
			}
		}
		qctx, cancel := s.query(ctx)
		deleted, err := st.DeleteTasks(qctx, &store.DeleteTasksParams{Tenant: job.Filter.Tenant, TaskIDs: ids})
		cancel()
		if err != nil {
			return c, s.storeFailure(ctx, "delete_tasks", err)
		}
		c.done, c.skipped = len(deleted), len(tasks)-len(deleted)
	}
	return c, nil
}

// retryable reports whether a task in state st may be retried.
func retryable(st dockettype.State) bool {
	return st == dockettype.StateFailed || st == dockettype.StateTimedOut || st == dockettype.StateCancelled
}
