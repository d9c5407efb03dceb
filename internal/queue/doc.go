// Package queue is Docket's core: the ExecutionService. It admits tasks
// transactionally, runs them on separate online and offline worker pools
// through the Runtime interface, fences every worker write against the
// worker's lease, and runs lease recovery, heartbeats and deadline
// enforcement on three independent schedulers; further schedulers on the
// same loop clean up finished work (cleaner.go) and fire the periodic
// schedules (schedule_scheduler.go, with the admin calls in schedules.go).
//
// The core depends on two interfaces only: Store for persistence and
// Runtime for execution. It imports no workflow, runtime or quality code:
// quality rules plug in as a registered workflow (architecture_test.go
// checks the imports).
//
// One file per component, each a small struct given its few dependencies by
// its constructor (a baseService with its logger and clock, the store calls
// it makes as a consumer-side interface, and its collaborators), never the
// Service: admitter.go, pool.go (claim loop), worker.go (one attempt),
// completer.go (one pool's outcome writes), and one file per scheduler on
// the shared loop in scheduler.go. A new scheduler is a copy of
// deadline_scheduler.go with its own store interface and tick, wired in
// Service.build. Constructors start no goroutines; Start does.
//
//	svc, err := queue.New(st, rt, queue.Config{})
//	if err != nil { … }
//	if err := svc.Start(ctx); err != nil { … }
//	defer svc.Stop()
//	res, err := svc.Submit(ctx, principal, &queue.SubmitRequest{
//		IdempotencyKey: "order-42", Workflow: "demo.echo", Input: json.RawMessage(`{"hi":1}`),
//	})
package queue
