package engine

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// Store is a store.Store made of a Backend and the engine's state machine.
type Store struct {
	b Backend // the backend, watched by health
	// raw is the backend itself, for its optional interfaces.
	raw Backend
	// health is what calls found about the database (see Ping); shared
	// by forks.
	health *health
	// tenants holds the tenants known to exist with their counter rows
	// (tenants are never deleted), so that admission skips creating them.
	// Shared by forks.
	tenants *sync.Map
}

var (
	_ store.Store       = (*Store)(nil)
	_ store.Listener    = (*Store)(nil)
	_ store.WriteProber = (*Store)(nil)
)

// Open is New for a backend's constructor: Open(OpenBackend(…)).
func Open(b Backend, err error) (*Store, error) {
	if err != nil {
		return nil, err
	}
	return New(b), nil
}

// New returns the store that runs the engine on b.
func New(b Backend) *Store { return newStore(b, &health{}, &sync.Map{}) }

func newStore(raw Backend, h *health, tenants *sync.Map) *Store {
	return &Store{b: &watchedBackend{Backend: raw, h: h}, raw: raw, health: h, tenants: tenants}
}

// Fork returns a store on a fork of the backend (its own connection budget):
// a *VacuumingStore when the backend vacuums (store.Vacuumer).
func (s *Store) Fork(name string, opts store.ForkOptions) (store.Store, error) {
	f, err := s.raw.Fork(name, opts)
	if err != nil {
		return nil, err
	}
	st := newStore(f, s.health, s.tenants)
	if v, ok := f.(store.Vacuumer); ok {
		return &VacuumingStore{Store: st, v: v}, nil
	}
	return st, nil
}

// Close closes the backend.
func (s *Store) Close() error { return s.b.Close() }

// changes accumulates what one transaction does to the shared rows (events,
// in-flight counters, ready counts) so that a batch of N tasks writes them in
// a handful of statements, in the lock order.
type changes struct {
	events []Event
	// released are the changes to release slots: in-flight counts and
	// tenants' stored bytes.
	released map[counterKey]counterChange
	queued   map[queueKey]int
	// keys are the concurrency-key slots freed (negative counts).
	keys map[KeyRef]int
	// readyQueues are the queues this transaction made work ready in.
	readyQueues []store.Queue
	// handOff, in a finish, is the finishing node's room to start the
	// tasks that freed key slots go to (flushKeys).
	handOff *store.HandOff
}

type counterKey struct{ scope, key string }

type counterChange struct{ n, bytes int64 }

type queueKey struct {
	queue  store.Queue
	tenant string
}

func newChanges() *changes {
	return &changes{released: map[counterKey]counterChange{}, queued: map[queueKey]int{}}
}

func (c *changes) event(taskID string, from, to dockettype.State, epoch int64, code dockettype.Code) {
	c.events = append(c.events, Event{TaskID: taskID, From: from, To: to, Epoch: epoch, Code: code})
}

// release returns a terminal task's unit of its pool's capacity and of its
// tenant's limit.
func (c *changes) release(pool dockettype.Pool, tenant string) {
	c.add(counterKey{ScopePool, string(pool)}, counterChange{n: -1})
	c.add(counterKey{ScopeTenant, tenant}, counterChange{n: -1})
}

// stored counts bytes a tenant now keeps (a result, evidence) or no longer
// keeps (negative: deleted).
func (c *changes) stored(tenant string, bytes int64) {
	if bytes != 0 {
		c.add(counterKey{ScopeTenant, tenant}, counterChange{bytes: bytes})
	}
}

func (c *changes) add(k counterKey, d counterChange) {
	v := c.released[k]
	v.n += d.n
	v.bytes += d.bytes
	c.released[k] = v
}

func (c *changes) ready(queue store.Queue, tenant string, n int) {
	c.queued[queueKey{queue, tenant}] += n
}

// moved records what a transition did to the shared rows: a task that
// ended releases its reservation, and a ready task that leaves or joins the
// queue changes its tenant's ready count.
func (c *changes) ended(m Moved, to dockettype.State, code dockettype.Code) {
	c.event(m.TaskID, m.From, to, m.Epoch, code)
	c.release(m.Queue.Pool(), m.Tenant)
	c.keyReleased(m)
	if m.Ready {
		c.ready(m.Queue, m.Tenant, -1)
	}
}

func (c *changes) requeued(m Moved, code dockettype.Code) {
	c.event(m.TaskID, dockettype.StateRunning, dockettype.StateQueued, m.Epoch, code)
	if m.Ready {
		c.ready(m.Queue, m.Tenant, 1)
	}
}

// flushQueued writes the ready-count changes, sorted by queue and tenant.
func (c *changes) flushQueued(tx Tx) error {
	var deltas []QueueDelta
	for k, n := range c.queued {
		if n != 0 {
			deltas = append(deltas, QueueDelta{Queue: k.queue, Tenant: k.tenant, N: n})
		}
		if n > 0 && !slices.Contains(c.readyQueues, k.queue) {
			c.readyQueues = append(c.readyQueues, k.queue)
		}
	}
	clear(c.queued)
	if len(deltas) == 0 {
		return nil
	}
	slices.SortFunc(deltas, func(a, b QueueDelta) int {
		return cmp.Or(cmp.Compare(a.Queue, b.Queue), cmp.Compare(a.Tenant, b.Tenant))
	})
	return tx.AddQueued(deltas)
}

// flush writes everything accumulated, in the lock order: concurrency
// keys, ready counts, then release slots, then events (which lock nothing).
func (c *changes) flush(tx Tx, now time.Time) error {
	if err := c.flushKeys(tx, now); err != nil {
		return err
	}
	if err := c.flushQueued(tx); err != nil {
		return err
	}
	if len(c.released) > 0 {
		keys := slices.SortedFunc(maps.Keys(c.released), func(a, b counterKey) int {
			return cmp.Or(cmp.Compare(a.scope, b.scope), cmp.Compare(a.key, b.key))
		})
		deltas := make([]CounterDelta, 0, len(keys))
		for _, k := range keys {
			if v := c.released[k]; v != (counterChange{}) {
				deltas = append(deltas, CounterDelta{Scope: k.scope, Key: k.key, N: v.n, Bytes: v.bytes})
			}
		}
		clear(c.released)
		if len(deltas) > 0 {
			if err := tx.AddInFlight(deltas, true); err != nil {
				return err
			}
		}
	}
	var finished []string
	for _, e := range c.events {
		if e.To.Terminal() {
			finished = append(finished, e.TaskID)
		}
	}
	if len(c.events) > 0 {
		if err := tx.InsertEvents(c.events, now); err != nil {
			return err
		}
		c.events = c.events[:0]
	}
	if len(c.readyQueues) > 0 || len(finished) > 0 {
		slices.Sort(c.readyQueues)
		if err := tx.Notify(c.readyQueues, finished); err != nil {
			return err
		}
		c.readyQueues = nil
	}
	return nil
}

// taskIDs returns the distinct IDs of items, sorted.
func taskIDs[T any](items []T, id func(T) string) []string {
	seen := make(map[string]bool, len(items))
	out := make([]string, 0, len(items))
	for _, it := range items {
		if k := id(it); !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

func invalid(op, why string) error { return fmt.Errorf("%s: %s: %w", op, why, store.ErrInvalid) }

// errBindingVanished: a binding or task read in the same transaction that
// wrote or found it is missing. It cannot happen once committed; the
// transaction is abandoned rather than answered wrongly.
var errBindingVanished = fmt.Errorf("admit: binding vanished: %w", store.ErrUnavailable)

// ts is a time as every backend stores it: millisecond precision, UTC.
func ts(t time.Time) time.Time { return t.Truncate(time.Millisecond).UTC() }

// Listen delivers the backend's notifications (see store.Listener). With a
// backend that has none (one node), it delivers nothing and returns when
// ctx ends.
func (s *Store) Listen(ctx context.Context, fn func(store.Notification)) error {
	if l, ok := s.raw.(store.Listener); ok {
		return l.Listen(ctx, fn)
	}
	<-ctx.Done()
	return nil
}
