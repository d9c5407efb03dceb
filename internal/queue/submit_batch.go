package queue

import (
	"context"
	"errors"
	"fmt"

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
// The valid items are admitted as one group of the admitter's group commit
// (see admitter), in one store transaction that may carry concurrent
// submissions too: when the store fails, SubmitBatch returns
// store_unavailable and nothing of the batch was admitted. Other errors concern the whole call (no principal, no
// items, too many; a depends_on that names an unknown task, a later item
// or makes a cycle: invalid_dependency) and are *dockettype.Error values.
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
			out[i].Err = s.reject(dockettype.CodeInvalidRequest, "the task is missing", 0)
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
	if err := s.resolveBatchDependencies(reqs, items, at); err != nil {
		return nil, err
	}
	if err := s.checkDependencies(ctx, p.Tenant, items); err != nil {
		return nil, err
	}
	res, err := s.admit(ctx, items)
	if err != nil {
		return nil, err
	}
	for j, r := range res {
		out[at[j]] = r
	}
	return out, nil
}

// itemCode reports whether a validation error concerns one item only.
func itemCode(c dockettype.Code) bool {
	return c == dockettype.CodeInvalidRequest || c == dockettype.CodeUnknownWorkflow
}
