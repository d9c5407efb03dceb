package queue

import (
	"context"
	"errors"
	"fmt"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// retrier is the store call a retry makes.
type retrier interface {
	Retry(ctx context.Context, params *store.RetryParams) ([]store.RetryResult, error)
}

// Retry queues a failed, timed_out or cancelled task again (see
// store.Failures.Retry): a member retries its tenant's tasks, an admin any
// tenant's. It is refused like an admission when the pool or the tenant is
// full (429 queue_full, tenant_quota_exceeded), and with 409 not_retryable
// for a task that succeeded or is not terminal. Errors are
// *dockettype.Error values.
func (s *Service) Retry(ctx context.Context, p dockettype.Principal, id string) (*dockettype.Task, error) {
	if p.Tenant == "" {
		return nil, dockettype.NewError(dockettype.CodeUnauthenticated, "no authenticated principal")
	}
	tenant := p.Tenant
	if p.Role == dockettype.RoleAdmin {
		tenant = "" // the operator's: any tenant's task
	}
	qctx, cancel := s.query(ctx)
	found, err := s.store.MatchTasks(qctx, &store.MatchTasksParams{Filter: store.TaskFilter{Tenant: tenant}, TaskID: id, Limit: 1})
	cancel()
	if err != nil {
		return nil, s.storeFailure(ctx, "match_tasks", err)
	}
	if len(found) == 0 {
		return nil, dockettype.NewError(dockettype.CodeNotFound, "task not found")
	}
	out, err := s.retryMatched(ctx, s.store, actorOf(p), found, false)
	if err != nil {
		return nil, err
	}
	return out[0].Task, out[0].Err
}

// actorOf is who a principal's change is recorded as.
func actorOf(p dockettype.Principal) dockettype.Actor {
	return dockettype.Actor{KeyID: p.KeyID, Role: p.Role}
}

// retried is the outcome of one task's retry: the task (retried, or as it
// is when not retryable), or the refusal.
type retried struct {
	Task    *dockettype.Task
	Err     error
	Outcome store.RetryOutcome // 0 when refused before the store (unknown workflow)
}

// retryMatched retries matched tasks in one store transaction: each
// workflow is resolved now, as an admission resolves it, for the queue the
// task waits in. The error concerns the whole call (the store failed).
func (s *Service) retryMatched(ctx context.Context, st retrier, by dockettype.Actor, tasks []store.MatchedTask, quiet bool) ([]retried, error) {
	out := make([]retried, len(tasks))
	queues := map[string]store.Queue{}
	refused := map[string]error{}
	var items []*store.RetryItem
	var index []int
	for i, t := range tasks {
		q, ok := queues[t.Workflow]
		if err := refused[t.Workflow]; err != nil {
			out[i].Err = err
			continue
		}
		if !ok {
			res, err := s.runtime.Resolve(ctx, t.Workflow)
			if err != nil {
				var de *dockettype.Error
				if !errors.As(err, &de) {
					return nil, s.storeFailure(ctx, "resolve_workflow", err)
				}
				refused[t.Workflow] = s.reject(de.Code, de.Message, 0)
				out[i].Err = refused[t.Workflow]
				continue
			}
			q = store.PoolQueue(t.Pool)
			if res.Remote {
				q = store.RemoteQueue(t.Pool, t.Workflow)
			}
			queues[t.Workflow] = q
		}
		items = append(items, &store.RetryItem{TaskID: t.TaskID, Tenant: t.Tenant, Queue: q,
			PoolCapacity: s.cfg.pool(t.Pool).Capacity})
		index = append(index, i)
	}
	if len(items) == 0 {
		return out, nil
	}
	qctx, cancel := s.query(ctx)
	res, err := st.Retry(qctx, &store.RetryParams{Now: s.clock.Now(), By: by, Items: items, Quiet: quiet})
	cancel()
	if err != nil {
		return nil, s.storeFailure(ctx, "retry", err)
	}
	woken := map[store.Queue]bool{}
	for n, r := range res {
		i, it := index[n], items[n]
		o := &out[i]
		o.Outcome, o.Task = r.Outcome, r.Task
		switch r.Outcome {
		case store.Retried:
			if !woken[it.Queue] {
				woken[it.Queue] = true
				s.wake(it.Queue)
			}
		case store.NotRetryable:
			msg := "only a failed, timed_out or cancelled task can be retried"
			if r.Task != nil {
				msg = fmt.Sprintf("a %s task cannot be retried: only failed, timed_out and cancelled ones", r.Task.State)
			}
			o.Err = dockettype.NewError(dockettype.CodeNotRetryable, msg)
		case store.RetryNotFound:
			o.Err = dockettype.NewError(dockettype.CodeNotFound, "task not found")
		case store.RetryQueueFull:
			o.Err = s.reject(dockettype.CodeQueueFull, fmt.Sprintf("the %s pool is at capacity", tasks[i].Pool), s.cfg.RetryAfter)
		case store.RetryTenantQuotaExceeded:
			o.Err = s.reject(dockettype.CodeTenantQuotaExceeded, "the tenant's in-flight limit is reached", s.cfg.RetryAfter)
		default:
			o.Err = dockettype.NewError(dockettype.CodeInternal, "unexpected retry outcome")
		}
	}
	return out, nil
}
