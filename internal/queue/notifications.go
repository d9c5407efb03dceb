package queue

import (
	"context"

	"github.com/docket-dev/docket/internal/startstop"
	"github.com/docket-dev/docket/internal/store"
)

// notificationListener hands this node the hints a store shared by several
// nodes sends (store.Listener): work another node made ready wakes the
// pool at once instead of at its next poll, and a task another node
// finished answers the long polls waiting for it here. A lost hint costs
// only the poll's delay.
type notificationListener struct {
	baseService
	store   store.Listener
	wakeups *queueWakeups
	waiters *waiters
	loop    startstop.Loop
}

func newNotificationListener(base baseService, st store.Listener, wakeups *queueWakeups, w *waiters) *notificationListener {
	return &notificationListener{baseService: base, store: st, wakeups: wakeups, waiters: w}
}

func (l *notificationListener) Start(ctx context.Context) error { return l.loop.Start(ctx, l.run) }
func (l *notificationListener) Stop()                           { l.loop.Stop() }

func (l *notificationListener) run(ctx context.Context) {
	_ = l.store.Listen(ctx, func(n store.Notification) {
		if n.Ready != "" {
			l.wakeups.wake(n.Ready)
		}
		for _, id := range n.Finished {
			l.waiters.notify(id)
		}
	})
}
