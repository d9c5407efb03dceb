// Package dockettype holds Docket's shared domain types: tasks, states,
// pools, events, evidence and the closed set of error codes.
//
// It imports nothing of Docket's own, so every other package (the queue core,
// the store backends, the HTTP layer and the public client) can share it
// without import cycles.
//
//	if task.State.Terminal() {
//		fmt.Println(task.ID, "ended", task.State)
//	}
package dockettype
