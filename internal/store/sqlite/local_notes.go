package sqlite

import (
	"context"
	"sync"

	"github.com/docket-dev/docket/internal/store"
)

// localNotes delivers a transaction's notifications (engine.Tx.Notify) to
// the listeners of this process once it commits: an SQLite database has
// one node, yet work one transaction makes ready as a side effect (a
// dependent whose last dependency finished) must wake the pool at once,
// as PostgreSQL's notifications do. Shared by forks.
type localNotes struct {
	mu        sync.Mutex
	listeners map[int]func(store.Notification)
	next      int
}

func newLocalNotes() *localNotes { return &localNotes{listeners: map[int]func(store.Notification){}} }

// Listen delivers notifications to fn until ctx ends; see store.Listener.
func (s *Backend) Listen(ctx context.Context, fn func(store.Notification)) error {
	n := s.notes
	n.mu.Lock()
	id := n.next
	n.next++
	n.listeners[id] = fn
	n.mu.Unlock()
	<-ctx.Done()
	n.mu.Lock()
	delete(n.listeners, id)
	n.mu.Unlock()
	return nil
}

// publish delivers notes to every listener. The listeners must not block
// (store.Listener).
func (n *localNotes) publish(notes []store.Notification) {
	if len(notes) == 0 {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, fn := range n.listeners {
		for _, note := range notes {
			fn(note)
		}
	}
}
