// Package worker runs Docket tasks in your own Go process: a remote worker
// that claims tasks of the remote workflows it handles, heartbeats them,
// and finishes them over the worker API (docs/worker-protocol.md).
//
// An admin registers each remote workflow once (`docket workflows register
// images.resize --pool online`) and makes a worker key (`docket keys create
// --tenant acme --principal resize-fleet --role worker`). Then:
//
//	w := worker.New("http://127.0.0.1:8080", os.Getenv("DOCKET_WORKER_KEY"), worker.Options{Slots: 8})
//	w.Handle("images.resize", func(ctx context.Context, t *worker.Task) (any, error) {
//		var in struct{ URL string }
//		if err := json.Unmarshal(t.Input, &in); err != nil {
//			return nil, worker.Fail("invalid_input", "input needs a url", false)
//		}
//		return resize(ctx, in.URL) // ctx ends when the task is cancelled, times out or loses its lease
//	})
//	err := w.Run(ctx) // until ctx ends; then a graceful shutdown
//
// The Worker claims only as many tasks as it has free slots, long-polling
// while idle; renews every lease it holds in one heartbeat call per
// interval; cancels a handler's context when the server says the task was
// cancelled, timed out or lost its lease (its result is then dropped, never
// sent); and batches outcomes into finish calls, retried on network errors
// (finishing is idempotent on the server). When Run's context ends it stops
// claiming, keeps heartbeating while running handlers finish for
// ShutdownGrace, cancels the rest (context.Cause is ErrShutdown), hands
// their leases back (the tasks are queued again at once, the attempt not
// charged), writes every outcome, and returns.
//
// When the program has an OpenTelemetry tracer provider (the global one,
// or Options.TracerProvider), each attempt gets a span, docket.worker.run,
// in the task's trace: a child of the task's span, whose traceparent the
// claim carries (Task.Traceparent). The handler's context carries the span,
// so the handler's own spans join the trace (docs/tracing.md).
package worker
