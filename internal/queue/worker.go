package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/metrics"
	"github.com/docket-dev/docket/internal/store"
)

// errPanic marks an attempt that panicked; the panic value is never logged.
var errPanic = errors.New("workflow panicked")

// execute runs one claimed attempt and hands its outcome to the completer.
func (s *Service) execute(ctx context.Context, c *store.ClaimedTask) {
	lease := c.Lease()
	task := c.Task
	// The task's own deadline stops the worker even if this node's deadline
	// scheduler is slow. (clockwork.WithDeadline is not used: its fake-clock
	// context blocks in Err until done.)
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	timer := s.clock.AfterFunc(task.DeadlineAt.Sub(s.clock.Now()), func() { cancel(errTimedOut) })
	defer timer.Stop()
	result, err := s.invoke(runCtx, c)
	s.leases.remove(lease)

	if err != nil && runCtx.Err() != nil {
		// Stopped by cancel, deadline, lease loss or shutdown: the state is
		// decided elsewhere (or, for shutdown, by recovery). Not a failure.
		return
	}
	item := store.FinishItem{Lease: lease}
	switch {
	case err == nil:
		item.Kind, item.Result = store.FinishSucceed, result
	default:
		code, retryable := s.classify(task, err)
		item.Code, item.Message = code, failureMessage(code, err)
		if retryable && task.Attempt < task.MaxAttempts {
			item.Kind = store.FinishRetry
			item.RunAfter = s.clock.Now().Add(s.backoff(task.Attempt))
		} else {
			item.Kind = store.FinishFail
		}
	}
	s.completer.enqueue(&finishRequest{item: item, pool: task.Pool, workflow: task.Workflow, traceID: task.TraceID, tenant: task.Tenant})
}

// invoke calls the runtime, turning a panic into errPanic.
func (s *Service) invoke(ctx context.Context, c *store.ClaimedTask) (result json.RawMessage, err error) {
	defer func() {
		if r := recover(); r != nil {
			result, err = nil, errPanic
		}
	}()
	inv := &Invocation{
		Task:     *c.Task,
		Input:    json.RawMessage(c.Input),
		Evidence: &fencedEvidence{svc: s, lease: c.Lease()},
	}
	result, err = s.runtime.Run(ctx, inv)
	if err == nil && result != nil && !json.Valid(result) {
		return nil, &dockettype.Failure{Code: dockettype.CodeWorkflowError}
	}
	return result, err
}

// classify maps an attempt's error to a code and whether to retry, counting
// panics and unexpected errors. Codes only: never the error's text.
func (s *Service) classify(task *dockettype.Task, err error) (dockettype.Code, bool) {
	log := s.log.With("task_id", task.ID, "tenant", task.Tenant, "trace_id", task.TraceID, "workflow", task.Workflow)
	var f *dockettype.Failure
	switch {
	case errors.Is(err, errPanic):
		s.metrics.WorkerPanics.WithLabelValues(task.Workflow).Inc()
		log.Error("workflow panicked", "code", dockettype.CodeWorkerPanic)
		return dockettype.CodeWorkerPanic, true
	case errors.As(err, &f):
		code := f.Code
		if !validWorkflowCode(code) {
			code = dockettype.CodeWorkflowError
		}
		return code, f.Retryable
	case errors.Is(err, store.ErrStaleLease):
		// An evidence write was fenced: the lease is gone, so is the task.
		return dockettype.CodeStaleLease, false
	case errors.Is(err, store.ErrUnavailable):
		// An evidence write failed: counted where it failed; retry the attempt.
		return dockettype.CodeStoreUnavailable, true
	default:
		s.metrics.WorkerErrors.WithLabelValues(task.Workflow, metrics.CodeLabel(dockettype.CodeWorkflowError)).Inc()
		log.Warn("workflow returned an unexpected error", "code", dockettype.CodeWorkflowError)
		return dockettype.CodeWorkflowError, true
	}
}

// validWorkflowCode accepts a workflow's own code when it looks like one of
// ours: lowercase snake case, at most 64 bytes.
func validWorkflowCode(c dockettype.Code) bool {
	if len(c) == 0 || len(c) > 64 || c[0] < 'a' || c[0] > 'z' {
		return false
	}
	for i := 0; i < len(c); i++ {
		ch := c[i]
		if !(ch >= 'a' && ch <= 'z' || ch >= '0' && ch <= '9' || ch == '_') {
			return false
		}
	}
	return true
}

// backoff is the delay before retry number attempt: exponential from
// RetryBackoffBase, capped at RetryBackoffMax, with ±20% jitter so that
// tasks failing together do not retry together.
func (s *Service) backoff(attempt int) time.Duration {
	d := s.cfg.RetryBackoffBase
	for i := 1; i < attempt && d < s.cfg.RetryBackoffMax; i++ {
		d *= 2
	}
	d = min(d, s.cfg.RetryBackoffMax)
	jitter := time.Duration(rand.Int64N(int64(d)/5+1)) * 2
	return d - d/5 + jitter
}

// fencedEvidence writes evidence under one attempt's lease.
type fencedEvidence struct {
	svc   *Service
	lease store.Lease
}

func (e *fencedEvidence) WriteEvidence(ctx context.Context, items []dockettype.EvidenceItem) error {
	params := &store.AppendEvidenceParams{Now: e.svc.clock.Now(), Lease: e.lease}
	for _, it := range items {
		if !json.Valid(it.Body) {
			return fmt.Errorf("evidence %q: body is not valid JSON", it.Kind)
		}
		params.Items = append(params.Items, store.EvidenceItem{Kind: it.Kind, Body: it.Body})
	}
	qctx, cancel := context.WithTimeout(ctx, e.svc.cfg.QueryTimeout)
	defer cancel()
	err := e.svc.store.AppendEvidence(qctx, params)
	switch {
	case errors.Is(err, store.ErrStaleLease):
		e.svc.metrics.FencingRejections.WithLabelValues("evidence").Inc()
		e.svc.log.WarnContext(ctx, "evidence write fenced", "code", dockettype.CodeStaleLease, "task_id", e.lease.TaskID)
		return err
	case err != nil:
		e.svc.metrics.StoreErrors.WithLabelValues("append_evidence").Inc()
		e.svc.log.WarnContext(ctx, "evidence write failed", "code", dockettype.CodeStoreUnavailable, "task_id", e.lease.TaskID)
		return fmt.Errorf("write evidence: %w", store.ErrUnavailable)
	}
	return nil
}
