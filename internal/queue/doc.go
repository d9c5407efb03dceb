// Package queue is Docket's core: the ExecutionService. It admits tasks
// transactionally, runs them on separate online and offline worker pools
// through the Runtime interface, fences every worker write against the
// worker's lease, and runs lease recovery, heartbeats and deadline
// enforcement on three independent schedulers.
//
// The core depends on two interfaces only: store.Store for persistence and
// Runtime for execution. It imports no workflow or quality code (R9).
//
//	svc, err := queue.New(st, rt, queue.Config{})
//	if err != nil { … }
//	if err := svc.Start(ctx); err != nil { … }
//	defer svc.Stop()
//	res, err := svc.Submit(ctx, principal, &queue.SubmitRequest{
//		IdempotencyKey: "order-42", Workflow: "demo.echo", Input: json.RawMessage(`{"hi":1}`),
//	})
package queue
