package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/metrics"
	"github.com/docket-dev/docket/internal/store"
)

// errPanic marks an attempt that panicked; the panic value is never logged.
var errPanic = errors.New("workflow panicked")

// worker runs claimed attempts of one pool: it registers the attempt's
// lease for heartbeats, invokes the runtime under the task's deadline,
// decides the outcome (success, retry with backoff, failure) and hands it
// to its pool's completer. A pool runs each attempt on its own goroutine
// through the same worker.
type worker struct {
	baseService
	pool      dockettype.Pool
	runtime   Runtime
	evidence  runStore
	leases    *leaseRegistry
	completer *completer
	metrics   *metrics.Metrics
	spans     spans
	cfg       workerConfig

	done *testSignal[string]
}

// workerConfig is the part of the Config a worker reads.
type workerConfig struct {
	RetryBackoffBase time.Duration
	RetryBackoffMax  time.Duration
	QueryTimeout     time.Duration // per evidence write
	MaxResultBytes   int
}

func newWorker(base baseService, pool dockettype.Pool, rt Runtime, ev runStore, leases *leaseRegistry,
	c *completer, m *metrics.Metrics, cfg workerConfig, sig *testSignals) *worker {
	return &worker{
		baseService: base,
		pool:        pool,
		runtime:     rt,
		evidence:    ev,
		leases:      leases,
		completer:   c,
		metrics:     m,
		cfg:         cfg,
		done:        &sig.workerDone,
	}
}

// start registers a claimed attempt's lease, so that heartbeats renew it
// and cancel, timeout or a refused heartbeat can stop it, and returns the
// function that runs the attempt (on a goroutine of the pool's). parent
// is cancelled, with errShutdown, by the pool's Stop.
func (w *worker) start(parent context.Context, c *store.ClaimedTask) func() {
	ctx, cancel := context.WithCancelCause(parent)
	w.leases.add(c.Lease(), cancel)
	// The attempt's span starts here, on the claiming goroutine: on the
	// worker's, whose stack the collector shrinks while it idles, the
	// SDK's calls would grow it again, copying it, for every task.
	spanCtx, span := w.spans.startRun(ctx, c)
	return func() {
		defer cancel(nil)
		w.work(ctx, spanCtx, span, cancel, c)
	}
}

// work runs one attempt and hands its outcome to the completer.
func (w *worker) work(runCtx, spanCtx context.Context, span trace.Span, cancel context.CancelCauseFunc, c *store.ClaimedTask) {
	lease := c.Lease()
	task := c.Task
	defer w.done.signal(task.ID)
	// The task's own deadline stops the worker even if this node's deadline
	// scheduler is slow. (clockwork.WithDeadline is not used: its fake-clock
	// context blocks in Err until done.)
	timer := w.clock.AfterFunc(task.DeadlineAt.Sub(w.clock.Now()), func() { cancel(errTimedOut) })
	defer timer.Stop()
	result, err := w.invoke(spanCtx, c)

	req := &finishRequest{item: store.FinishItem{Lease: lease}, workflow: task.Workflow, traceID: task.TraceID, tenant: task.Tenant,
		attempt: task.Attempt, keyed: task.ConcurrencyKey != "", unsampled: c.TraceUnsampled}
	switch {
	case err != nil && runCtx.Err() != nil:
		if !errors.Is(context.Cause(runCtx), errShutdown) {
			// Stopped by cancel, deadline or lease loss: the task's state
			// was decided elsewhere. Not a failure.
			endRun(span, task, nil, true)
			w.leases.remove(lease)
			return
		}
		// The node is shutting down: hand the lease back so that the task
		// runs again at once, this attempt not charged.
		req.item.Kind, req.item.Code = store.FinishRelease, dockettype.CodeShutdown
	case err == nil:
		req.item.Kind, req.item.Result = store.FinishSucceed, result
	default:
		code, retryable := w.classify(runCtx, task, err)
		req.item.Code, req.item.Message = code, failureMessage(code, err)
		if retryable && task.Attempt < task.MaxAttempts {
			req.item.Kind = store.FinishRetry
			req.item.RunAfter = w.clock.Now().Add(w.backoff(task.Attempt))
		} else {
			req.item.Kind = store.FinishFail
		}
	}
	endRun(span, task, &req.item, false)
	if w.spans.on {
		req.handed = w.clock.Now()
	}
	// The lease stays registered (and heartbeated) until the completer has
	// written the outcome.
	if !w.completer.enqueue(req) {
		w.leases.remove(lease) // the completer stopped: the lease lapses
	}
}

// invoke calls the runtime, turning a panic into errPanic.
func (w *worker) invoke(ctx context.Context, c *store.ClaimedTask) (result json.RawMessage, err error) {
	defer func() {
		if r := recover(); r != nil {
			result, err = nil, errPanic
		}
	}()
	inv := &Invocation{
		Task:     *c.Task,
		Input:    json.RawMessage(c.Input),
		Evidence: newFencedEvidence(w.baseService, w.evidence, w.metrics, c.Lease(), w.cfg.QueryTimeout),
		Dependencies: &storedDependencies{store: w.evidence, tenant: c.Task.Tenant, taskID: c.Task.ID,
			queryTimeout: w.cfg.QueryTimeout},
	}
	result, err = w.runtime.Run(ctx, inv)
	if err == nil && result != nil && !json.Valid(result) {
		return nil, &dockettype.Failure{Code: dockettype.CodeWorkflowError}
	}
	// A result is stored, listed nowhere and read back whole by every GET
	// of the task: bounded like a request body.
	if err == nil && len(result) > w.cfg.MaxResultBytes {
		return nil, &dockettype.Failure{Code: dockettype.CodeResultTooLarge,
			Message: fmt.Sprintf("the result of %d bytes is over the %d-byte limit", len(result), w.cfg.MaxResultBytes)}
	}
	return result, err
}

// classify maps an attempt's error to a code and whether to retry, counting
// panics and unexpected errors. Codes only: never the error's text.
func (w *worker) classify(ctx context.Context, task *dockettype.Task, err error) (dockettype.Code, bool) {
	var f *dockettype.Failure
	switch {
	case errors.Is(err, errPanic):
		w.metrics.WorkerPanics.WithLabelValues(task.Workflow).Inc()
		w.log.ErrorContext(ctx, "workflow panicked", "code", dockettype.CodeWorkerPanic,
			"task_id", task.ID, "tenant", task.Tenant, "trace_id", task.TraceID, "workflow", task.Workflow)
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
		w.metrics.WorkerErrors.WithLabelValues(task.Workflow, metrics.CodeLabel(dockettype.CodeWorkflowError)).Inc()
		w.log.WarnContext(ctx, "workflow returned an unexpected error", "code", dockettype.CodeWorkflowError,
			"task_id", task.ID, "tenant", task.Tenant, "trace_id", task.TraceID, "workflow", task.Workflow)
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
func (w *worker) backoff(attempt int) time.Duration {
	return retryBackoff(w.cfg.RetryBackoffBase, w.cfg.RetryBackoffMax, attempt)
}

// retryBackoff is the delay before retry number attempt, for in-process
// and remote attempts alike (see worker.backoff).
func retryBackoff(base, limit time.Duration, attempt int) time.Duration {
	d := base
	for i := 1; i < attempt && d < limit; i++ {
		d *= 2
	}
	d = min(d, limit)
	jitter := time.Duration(rand.Int64N(int64(d)/5+1)) * 2
	return d - d/5 + jitter
}
