package queue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// MaxBatchItems is the most submissions one SubmitBatch call takes.
const MaxBatchItems = 1000

// BatchResult is the outcome of one item of a batch: a task (new, or an
// earlier one replayed), or the item's own refusal.
type BatchResult struct {
	Task     *dockettype.Task
	Replayed bool              // same key and request as an earlier submission
	Err      *dockettype.Error // the item was refused: invalid_request, unknown_workflow, idempotency_conflict, queue_full or tenant_quota_exceeded
}

// SubmitBatch admits up to MaxBatchItems tasks for the principal's tenant,
// with the principal as author, and returns one result per request in
// order. Each item is validated like Submit and checked against its pool's
// capacity, the tenant's limit and its idempotency binding like Submit; an
// item's refusal does not affect the others. Items are admitted in order,
// so a later item sees the binding of an earlier one with the same key.
//
// The valid items are admitted in one store transaction: when the store
// fails, SubmitBatch returns store_unavailable and nothing of the batch
// was admitted. Other errors concern the whole call (no principal, no
// items, too many) and are *dockettype.Error values.
func (s *Service) SubmitBatch(ctx context.Context, p dockettype.Principal, reqs []*SubmitRequest) ([]BatchResult, error) {
	if p.Tenant == "" || p.Name == "" {
		return nil, s.reject(dockettype.CodeUnauthenticated, "no authenticated principal", 0)
	}
	if len(reqs) == 0 || len(reqs) > MaxBatchItems {
		return nil, s.reject(dockettype.CodeInvalidRequest, fmt.Sprintf("a batch holds 1 to %d tasks", MaxBatchItems), 0)
	}
	out := make([]BatchResult, len(reqs))
	items := make([]*store.AdmitItem, 0, len(reqs))
	at := make([]int, 0, len(reqs)) // at[j]: the request index of items[j]
	for i, req := range reqs {
		if req == nil {
			out[i].Err = s.rejectItem(dockettype.CodeInvalidRequest, "the task is missing", 0)
			continue
		}
		item, err := s.admissionItem(ctx, p, req)
		if err != nil {
			de, ok := errors.AsType[*dockettype.Error](err)
			if !ok || !itemCode(de.Code) {
				// The caller went away, or the configuration provider could
				// not answer: nothing of the batch is admitted.
				return nil, err
			}
			out[i].Err = de
			continue
		}
		items = append(items, item)
		at = append(at, i)
	}
	if len(items) == 0 {
		return out, nil
	}
	qctx, cancel := context.WithTimeout(ctx, s.cfg.QueryTimeout)
	defer cancel()
	res, err := s.store.Admit(qctx, &store.AdmitParams{Now: s.clock.Now(), Items: items})
	if err != nil {
		return nil, s.storeFailure(ctx, "admit", err)
	}
	woken := map[dockettype.Pool]bool{}
	for j, r := range res {
		item := items[j]
		o := &out[at[j]]
		switch r.Outcome {
		case store.Admitted:
			s.metrics.Submissions.WithLabelValues(string(item.Pool), "admitted").Inc()
			o.Task = r.Task
			if !woken[item.Pool] {
				woken[item.Pool] = true
				s.wake(item.QueueOf())
			}
		case store.Replayed:
			s.metrics.Submissions.WithLabelValues(string(r.Task.Pool), "replayed").Inc()
			o.Task, o.Replayed = r.Task, true
		case store.IdempotencyConflict:
			o.Err = s.rejectItem(dockettype.CodeIdempotencyConflict, "this idempotency key was used with a different request", 0)
		case store.QueueFull:
			o.Err = s.rejectItem(dockettype.CodeQueueFull, fmt.Sprintf("the %s pool is at capacity", item.Pool), s.cfg.RetryAfter)
		case store.TenantQuotaExceeded:
			o.Err = s.rejectItem(dockettype.CodeTenantQuotaExceeded, "the tenant's in-flight limit is reached", s.cfg.RetryAfter)
		default:
			return nil, s.reject(dockettype.CodeInternal, "unexpected admission outcome", 0)
		}
	}
	return out, nil
}

// rejectItem is reject for one item of a batch: counted the same way.
func (s *Service) rejectItem(code dockettype.Code, msg string, retryAfter time.Duration) *dockettype.Error {
	s.metrics.AdmissionRejections.WithLabelValues(string(code)).Inc()
	return &dockettype.Error{Code: code, Message: msg, RetryAfter: retryAfter}
}

// itemCode reports whether a validation error concerns one item only.
func itemCode(c dockettype.Code) bool {
	return c == dockettype.CodeInvalidRequest || c == dockettype.CodeUnknownWorkflow
}
