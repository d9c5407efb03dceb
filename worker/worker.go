package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/docket-dev/docket/client"
	"github.com/docket-dev/docket/dockettype"
)

// SDK names this package in the worker list operators see.
const SDK = "docket-go/1"

// Causes of a handler's context ending (context.Cause).
var (
	ErrCancelled = errors.New("worker: the task was cancelled")
	ErrTimedOut  = errors.New("worker: the task's deadline passed")
	ErrLeaseLost = errors.New("worker: the lease was lost")
	ErrShutdown  = errors.New("worker: the worker is shutting down")
)

// Handler runs one attempt of a task. Its result is marshaled to JSON (a
// json.RawMessage is sent as it is). An error made with Fail chooses the
// failure code and whether to retry; any other error fails the attempt
// with code workflow_error, retried while attempts remain. A panic is
// recovered and fails the attempt with code worker_panic.
type Handler func(ctx context.Context, t *Task) (any, error)

// Options tune a Worker. Zero values take the defaults.
type Options struct {
	// Slots is how many tasks run at once; default 10.
	Slots int
	// Pool limits claims to "online" or "offline"; empty: both.
	Pool dockettype.Pool
	// WorkerID names this process in GET /v1/admin/workers; default
	// host-pid.
	WorkerID string
	// Wait is how long an idle claim waits on the server for work
	// (long poll, at most 60s); default 5s. Shutdown waits for the claim
	// under way, so that no task it returns is lost.
	Wait time.Duration
	// ShutdownGrace is how long running handlers may finish once Run's
	// context ends, before they are cancelled; default 10s.
	ShutdownGrace time.Duration
	// HTTPClient sends the requests; default a client with keep-alive.
	HTTPClient *http.Client
	// Logger receives codes and IDs only, never inputs or results;
	// default slog.Default().
	Logger *slog.Logger
	// TracerProvider receives a span per attempt, "docket.worker.run", a
	// child of the task's span in the task's trace (the claim's
	// traceparent), and the handler's context carries it, so the
	// handler's own spans join the trace too. Default the program's
	// global provider (otel.GetTracerProvider): no span unless the
	// program set one up.
	TracerProvider trace.TracerProvider
}

// Worker claims and runs tasks of the workflows it has handlers for.
type Worker struct {
	c        *client.Client
	opts     Options
	log      *slog.Logger
	handlers map[string]Handler

	mu        sync.Mutex
	held      map[string]*attempt // by lease: every lease not yet finished, released or lost
	free      int
	freed     chan struct{} // buffered(1): a slot was freed
	heartbeat time.Duration

	handlersDone sync.WaitGroup
	finisher     *finisher
}

// attempt is one claimed task this worker holds.
type attempt struct {
	lease   string
	task    *Task
	cancel  context.CancelCauseFunc
	stopped bool // the server said stop (or the lease was handed back): send nothing for it
}

// New returns a Worker of the server at baseURL with a worker key.
func New(baseURL, key string, opts Options) *Worker {
	if opts.Slots <= 0 {
		opts.Slots = 10
	}
	if opts.Wait <= 0 {
		opts.Wait = 5 * time.Second
	}
	opts.Wait = min(opts.Wait, 60*time.Second)
	if opts.ShutdownGrace <= 0 {
		opts.ShutdownGrace = 10 * time.Second
	}
	if opts.WorkerID == "" {
		host, _ := os.Hostname()
		opts.WorkerID = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.TracerProvider == nil {
		opts.TracerProvider = otel.GetTracerProvider()
	}
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16, IdleConnTimeout: 90 * time.Second}}
	}
	w := &Worker{
		c:         client.New(baseURL, key, client.WithHTTPClient(hc)),
		opts:      opts,
		log:       opts.Logger.With("component", "docket-worker"),
		handlers:  map[string]Handler{},
		held:      map[string]*attempt{},
		free:      opts.Slots,
		freed:     make(chan struct{}, 1),
		heartbeat: time.Second,
	}
	w.finisher = newFinisher(w)
	return w
}

// Handle registers the handler of a remote workflow. Call it before Run.
func (w *Worker) Handle(workflow string, h Handler) {
	w.handlers[workflow] = h
}

// Run claims and runs tasks until ctx ends, then shuts down gracefully
// (see the package documentation) and returns nil. It returns early with
// an error the server will keep giving (a key that is not a worker key, a
// workflow that is not registered).
func (w *Worker) Run(ctx context.Context) error {
	if len(w.handlers) == 0 {
		return errors.New("worker: no handlers registered")
	}
	names := make([]string, 0, len(w.handlers))
	for n := range w.handlers {
		names = append(names, n)
	}
	slices.Sort(names)

	// Handlers and the writes that follow them outlive ctx: they end in
	// the shutdown's own order.
	life, endTasks := context.WithCancelCause(context.WithoutCancel(ctx))
	defer endTasks(nil)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		w.finisher.run()
	}()
	beats, stopBeats := context.WithCancel(context.WithoutCancel(ctx))
	beating := make(chan struct{})
	go func() {
		defer close(beating)
		w.heartbeats(beats)
	}()

	fatal := w.claims(ctx, life, names)

	// Shutdown: no more claims. Running handlers get the grace period,
	// then are cancelled and their leases handed back.
	if !w.waitHandlers(w.opts.ShutdownGrace) {
		endTasks(ErrShutdown)
		w.waitHandlers(w.opts.ShutdownGrace)
	}
	w.finisher.close()
	<-finished
	w.releaseHeld()
	stopBeats()
	<-beating
	return fatal
}

// claims runs the claim loop until ctx ends or the server refuses for
// good.
func (w *Worker) claims(ctx, life context.Context, names []string) error {
	backoff := newBackoff()
	for ctx.Err() == nil {
		free := w.waitFree(ctx)
		if free == 0 {
			continue
		}
		// Not cancelled by ctx: a claim cut short could lose the tasks
		// the server claimed for it. It ends within its wait.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.opts.Wait+30*time.Second)
		var ans claimAnswer
		err := w.c.Call(cctx, http.MethodPost, "/v1/worker/claim", claimRequest{
			Workflows: names, Pool: w.opts.Pool, Max: free, WaitMS: w.opts.Wait.Milliseconds(),
			WorkerID: w.opts.WorkerID, Slots: w.opts.Slots, SDK: SDK,
		}, &ans)
		cancel()
		if err != nil {
			if permanent(err) {
				w.log.Error("claims refused; stopping", "code", codeOf(err))
				return fmt.Errorf("worker: claim: %w", err)
			}
			w.log.Warn("claim failed; retrying", "code", codeOf(err))
			if !sleep(ctx, backoff.next(err)) {
				break
			}
			continue
		}
		backoff.reset()
		if ans.HeartbeatMS > 0 {
			w.mu.Lock()
			w.heartbeat = time.Duration(ans.HeartbeatMS) * time.Millisecond
			w.mu.Unlock()
		}
		for _, ct := range ans.Tasks {
			w.start(life, ct)
		}
		if len(ans.Tasks) == 0 {
			continue // the long poll found nothing: ask again
		}
		if len(ans.Tasks) < free {
			// A thin claim: let a little work gather before the next.
			if !sleep(ctx, time.Duration(rand.Int64N(int64(20*time.Millisecond)))) {
				break
			}
		}
	}
	return nil
}

// waitFree blocks until a slot is free or ctx ends, and returns the free
// slots.
func (w *Worker) waitFree(ctx context.Context) int {
	for {
		w.mu.Lock()
		free := w.free
		w.mu.Unlock()
		if free > 0 {
			return free
		}
		select {
		case <-w.freed:
		case <-ctx.Done():
			return 0
		}
	}
}

// start runs one claimed task on its own goroutine.
func (w *Worker) start(life context.Context, ct claimedTask) {
	t := ct.task(w)
	ctx, cancel := context.WithCancelCause(life)
	a := &attempt{lease: ct.Lease, task: t, cancel: cancel}
	w.mu.Lock()
	w.held[ct.Lease] = a
	w.free--
	w.mu.Unlock()
	h := w.handlers[t.Workflow]
	w.handlersDone.Add(1)
	go func() {
		defer w.handlersDone.Done()
		defer w.freeSlot()
		defer cancel(nil)
		dctx, stop := context.WithDeadlineCause(ctx, t.DeadlineAt, ErrTimedOut)
		defer stop()
		sctx, span := w.startSpan(dctx, t)
		result, err := call(sctx, h, t)
		endSpan(span, dctx, err)
		w.settle(a, dctx, result, err)
	}()
}

// spanName is the name of a remote attempt's span.
const spanName = "docket.worker.run"

// startSpan starts the attempt's span as a child of the task's span (the
// claim's traceparent). Its attributes are IDs, the workflow, the pool and
// the attempt: never the input.
func (w *Worker) startSpan(ctx context.Context, t *Task) (context.Context, trace.Span) {
	if t.Traceparent == "" {
		return ctx, nil
	}
	pctx := propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{"traceparent": t.Traceparent})
	if !trace.SpanContextFromContext(pctx).IsValid() {
		return ctx, nil
	}
	return w.opts.TracerProvider.Tracer("github.com/docket-dev/docket/worker").Start(pctx, spanName,
		trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(
			attribute.String("docket.task.id", t.ID),
			attribute.String("docket.tenant", t.Tenant),
			attribute.String("docket.workflow", t.Workflow),
			attribute.String("docket.pool", string(t.Pool)),
			attribute.Int("docket.attempt", t.Attempt),
		))
}

// endSpan ends the attempt's span with how the handler ended: a failure's
// code when it is one of Docket's codes (a handler's own becomes
// workflow_error), never its message.
func endSpan(span trace.Span, ctx context.Context, err error) {
	if span == nil {
		return
	}
	defer span.End()
	var f *Failure
	switch {
	case err == nil:
		span.SetAttributes(attribute.String("docket.outcome", "succeeded"))
		return
	case ctx.Err() != nil && errors.Is(context.Cause(ctx), ErrTimedOut):
		span.SetAttributes(attribute.String("docket.outcome", "timed_out"))
	case ctx.Err() != nil && errors.Is(context.Cause(ctx), ErrShutdown):
		span.SetAttributes(attribute.String("docket.outcome", "released"))
		return
	case errors.As(err, &f):
		code := dockettype.Code(f.Code)
		if !code.Known() {
			code = dockettype.CodeWorkflowError
		}
		span.SetAttributes(attribute.String("docket.outcome", "failed"), attribute.String("docket.error.code", string(code)))
	default:
		span.SetAttributes(attribute.String("docket.outcome", "failed"),
			attribute.String("docket.error.code", string(dockettype.CodeWorkflowError)))
	}
	span.SetStatus(codes.Error, "")
}

// call runs the handler, turning a panic into a failure.
func call(ctx context.Context, h Handler, t *Task) (result any, err error) {
	defer func() {
		if r := recover(); r != nil {
			result, err = nil, &Failure{Code: string(dockettype.CodeWorkerPanic), Message: "the handler panicked", Retryable: true}
		}
	}()
	if h == nil {
		return nil, &Failure{Code: string(dockettype.CodeUnknownWorkflow), Message: "this worker has no handler for the workflow"}
	}
	return h(ctx, t)
}

// settle hands a finished handler's outcome to the finisher, unless the
// task was stopped (its result is dropped) or is being handed back.
func (w *Worker) settle(a *attempt, ctx context.Context, result any, err error) {
	w.mu.Lock()
	stopped := a.stopped
	w.mu.Unlock()
	cause := context.Cause(ctx)
	switch {
	case stopped:
		return // the server already decided; nothing to send
	case ctx.Err() != nil && errors.Is(cause, ErrShutdown):
		return // handed back by releaseHeld
	case ctx.Err() != nil && errors.Is(cause, ErrTimedOut):
		// The server times the task out; a late result would be fenced.
		w.forget(a.lease)
		return
	}
	item := finishItem{Lease: a.lease}
	var f *Failure
	switch {
	case err == nil:
		raw, merr := json.Marshal(result)
		if merr != nil {
			item.Outcome, item.Error = "failed", &failureBody{Code: "invalid_result", Message: "the handler's result is not JSON-encodable"}
			break
		}
		item.Outcome, item.Result = "succeeded", raw
	case errors.As(err, &f):
		item.Outcome, item.Error = "failed", &failureBody{Code: f.Code, Message: f.Message, Retryable: f.Retryable}
	default:
		item.Outcome, item.Error = "failed", &failureBody{Code: string(dockettype.CodeWorkflowError),
			Message: fmt.Sprintf("the handler returned an error (%T)", err), Retryable: true}
	}
	w.finisher.add(item)
}

func (w *Worker) freeSlot() {
	w.mu.Lock()
	w.free++
	w.mu.Unlock()
	select {
	case w.freed <- struct{}{}:
	default:
	}
}

// forget drops a lease from the heartbeats (finished, lost or released).
func (w *Worker) forget(lease string) {
	w.mu.Lock()
	delete(w.held, lease)
	w.mu.Unlock()
}

// waitHandlers waits up to d for every handler to return.
func (w *Worker) waitHandlers(d time.Duration) bool {
	done := make(chan struct{})
	go func() {
		w.handlersDone.Wait()
		close(done)
	}()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-done:
		return true
	case <-timer.C:
		return false
	}
}

// releaseHeld hands back every lease still held after the outcomes were
// written: tasks cut short by the shutdown (and any whose handler ignored
// its cancellation).
func (w *Worker) releaseHeld() {
	w.mu.Lock()
	var leases []string
	for l, a := range w.held {
		a.stopped = true
		leases = append(leases, l)
	}
	clear(w.held)
	w.mu.Unlock()
	for chunk := range slices.Chunk(leases, maxLeasesPerCall) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		var ans leasesAnswer
		err := retry(ctx, func() error {
			return w.c.Call(ctx, http.MethodPost, "/v1/worker/release", leasesRequest{Leases: chunk, WorkerID: w.opts.WorkerID}, &ans)
		})
		cancel()
		if err != nil {
			w.log.Warn("leases not handed back; they lapse after the lease TTL", "code", codeOf(err), "count", len(chunk))
		}
	}
}

// heartbeats renews every held lease once per interval, in one call (or a
// few for very many leases), and stops the handlers of refused leases.
func (w *Worker) heartbeats(ctx context.Context) {
	for {
		w.mu.Lock()
		interval := w.heartbeat
		w.mu.Unlock()
		if !sleep(ctx, interval) {
			return
		}
		w.mu.Lock()
		leases := make([]string, 0, len(w.held))
		for l, a := range w.held {
			if !a.stopped {
				leases = append(leases, l)
			}
		}
		w.mu.Unlock()
		for chunk := range slices.Chunk(leases, maxLeasesPerCall) {
			hctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			var ans leasesAnswer
			err := w.c.Call(hctx, http.MethodPost, "/v1/worker/heartbeat", leasesRequest{Leases: chunk, WorkerID: w.opts.WorkerID}, &ans)
			cancel()
			if err != nil {
				if ctx.Err() == nil {
					w.log.Warn("heartbeat failed", "code", codeOf(err), "leases", len(chunk))
				}
				continue
			}
			for _, st := range ans.Leases {
				if st.Status != "ok" {
					w.stop(st.Lease, st.Status)
				}
			}
		}
	}
}

// stop ends a task the server no longer lets this worker run.
func (w *Worker) stop(lease, status string) {
	w.mu.Lock()
	a, ok := w.held[lease]
	if ok {
		a.stopped = true
		delete(w.held, lease)
	}
	w.mu.Unlock()
	if !ok {
		return
	}
	cause := ErrLeaseLost
	switch status {
	case "cancelled":
		cause = ErrCancelled
	case "timed_out":
		cause = ErrTimedOut
	}
	w.log.Info("task stopped by the server", "status", status, "task_id", a.task.ID)
	a.cancel(cause)
}
