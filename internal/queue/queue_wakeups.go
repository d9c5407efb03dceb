package queue

import (
	"sync"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// queueWakeups tells whoever claims a queue on this node that work may be
// ready in it: a pool's claim loop for the pool's own queue, and the long
// polls of remote workers for a remote workflow's queue. Admission on this
// node, recovery, and the store's notifications from other nodes all wake
// through it.
type queueWakeups struct {
	pools map[dockettype.Pool]*wakeup

	mu     sync.Mutex
	remote map[store.Queue]map[*wakeup]struct{} // the long polls waiting on each queue
}

func newQueueWakeups() *queueWakeups {
	w := &queueWakeups{pools: map[dockettype.Pool]*wakeup{}, remote: map[store.Queue]map[*wakeup]struct{}{}}
	for _, p := range dockettype.Pools {
		w.pools[p] = newWakeup()
	}
	return w
}

// pool returns the wake-up of p's claim loop.
func (w *queueWakeups) pool(p dockettype.Pool) *wakeup { return w.pools[p] }

// wake tells the claimers of q that work may be ready.
func (w *queueWakeups) wake(q store.Queue) {
	if !q.Remote() {
		if p, ok := w.pools[q.Pool()]; ok {
			p.wake()
		}
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for s := range w.remote[q] {
		s.wake()
	}
}

// wakeAll wakes every pool and every long poll (tasks were requeued by a
// scan that does not say where).
func (w *queueWakeups) wakeAll() {
	for _, p := range w.pools {
		p.wake()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, subs := range w.remote {
		for s := range subs {
			s.wake()
		}
	}
}

// subscribe registers a long poll on queues: the channel receives when any
// of them is woken. Subscribe before the claim that found nothing, so that
// a submit between that claim and the wait is not missed. cancel
// unregisters it.
func (w *queueWakeups) subscribe(queues []store.Queue) (c <-chan struct{}, cancel func()) {
	s := newWakeup()
	w.mu.Lock()
	for _, q := range queues {
		subs := w.remote[q]
		if subs == nil {
			subs = map[*wakeup]struct{}{}
			w.remote[q] = subs
		}
		subs[s] = struct{}{}
	}
	w.mu.Unlock()
	return s.c(), func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		for _, q := range queues {
			delete(w.remote[q], s)
			if len(w.remote[q]) == 0 {
				delete(w.remote, q)
			}
		}
	}
}
