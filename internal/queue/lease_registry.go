package queue

import (
	"context"
	"sync"

	"github.com/docket-dev/docket/internal/store"
)

// leaseRegistry tracks the leases this node holds, from claim until the
// attempt's outcome is written, so that the heartbeat scheduler can renew
// them and cancel, timeout or a refused renewal can stop the worker at once.
type leaseRegistry struct {
	mu   sync.Mutex
	held map[string]heldLease
}

type heldLease struct {
	epoch  int64
	cancel context.CancelCauseFunc
}

func newLeaseRegistry() *leaseRegistry { return &leaseRegistry{held: map[string]heldLease{}} }

func (r *leaseRegistry) add(l store.Lease, cancel context.CancelCauseFunc) {
	r.mu.Lock()
	r.held[l.TaskID] = heldLease{epoch: l.Epoch, cancel: cancel}
	r.mu.Unlock()
}

func (r *leaseRegistry) remove(l store.Lease) {
	r.mu.Lock()
	if h, ok := r.held[l.TaskID]; ok && h.epoch == l.Epoch {
		delete(r.held, l.TaskID)
	}
	r.mu.Unlock()
}

// stop cancels the worker holding exactly lease l, if any, and forgets it.
func (r *leaseRegistry) stop(l store.Lease, cause error) bool {
	r.mu.Lock()
	h, ok := r.held[l.TaskID]
	if ok && h.epoch == l.Epoch {
		delete(r.held, l.TaskID)
	}
	r.mu.Unlock()
	if !ok || h.epoch != l.Epoch {
		return false
	}
	h.cancel(cause)
	return true
}

func (r *leaseRegistry) snapshot() []store.Lease {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]store.Lease, 0, len(r.held))
	for id, h := range r.held {
		out = append(out, store.Lease{TaskID: id, Epoch: h.epoch})
	}
	return out
}

// clear forgets every lease (the service stopped: what is left lapses).
func (r *leaseRegistry) clear() {
	r.mu.Lock()
	clear(r.held)
	r.mu.Unlock()
}

func (r *leaseRegistry) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.held)
}
