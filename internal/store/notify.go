package store

import (
	"context"
)

// Listener is what a store shared by several nodes offers so that work
// submitted or finished on one node wakes the others at once: a pool whose
// work became ready claims without waiting for its poll, and a long poll
// on a task another node finished answers without waiting for its re-read.
// Notifications are hints sent when the transaction that caused them
// commits; one may be lost (a reconnect), so callers keep a slow poll as a
// fallback.
type Listener interface {
	// Listen delivers notifications to fn until ctx ends, reconnecting
	// with backoff when the connection is lost. fn runs on Listen's
	// goroutine and must not block.
	Listen(ctx context.Context, fn func(Notification)) error
}

// Notification is one hint from another node (or this one).
type Notification struct {
	// Ready names a queue in which work became ready.
	Ready Queue
	// Finished names tasks that became terminal.
	Finished []string
}
