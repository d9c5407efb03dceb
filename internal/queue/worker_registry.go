package queue

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/docket-dev/docket/internal/metrics"
	"github.com/docket-dev/docket/internal/store"
)

// workerRegistry remembers the remote workers this node has answered: who
// they are (key, tenant scope, workflows, slots, SDK), how many leases they
// held at their last heartbeat, and when they were last seen. Calls only
// update memory; the registry flusher writes what changed to the store
// every few seconds in one transaction, so a worker's heartbeat costs one
// transaction (its renewal) and operators see every node's workers.
type workerRegistry struct {
	mu    sync.Mutex
	seen  map[workerKey]*store.Worker
	dirty map[workerKey]bool
}

type workerKey struct{ keyID, id string }

func newWorkerRegistry() *workerRegistry {
	return &workerRegistry{seen: map[workerKey]*store.Worker{}, dirty: map[workerKey]bool{}}
}

// saw records a call of w at now. workflows (nil: unchanged) are those it
// claims; leases (< 0: unchanged) those it heartbeated.
func (r *workerRegistry) saw(w *RemoteWorker, workflows []string, leases int, now time.Time) {
	k := workerKey{w.KeyID, w.ID}
	r.mu.Lock()
	defer r.mu.Unlock()
	rec := r.seen[k]
	if rec == nil {
		rec = &store.Worker{ID: w.ID, KeyID: w.KeyID}
		r.seen[k] = rec
	}
	rec.Tenant, rec.AllTenants, rec.LastSeenAt = w.Tenant, w.AllTenants, now
	if w.SDK != "" {
		rec.SDK = w.SDK
	}
	if w.Slots > 0 {
		rec.Slots = w.Slots
	}
	if workflows != nil && !slices.Equal(rec.Workflows, workflows) {
		rec.Workflows = slices.Clone(workflows)
	}
	if leases >= 0 {
		rec.Leases = leases
	}
	r.dirty[k] = true
}

// take returns copies of the records changed since the last take.
func (r *workerRegistry) take() []*store.Worker {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*store.Worker, 0, len(r.dirty))
	for k := range r.dirty {
		c := *r.seen[k]
		if c.Workflows == nil {
			c.Workflows = []string{}
		}
		out = append(out, &c)
	}
	clear(r.dirty)
	return out
}

// putBack marks records dirty again after a failed write (unless a newer
// sighting replaced them meanwhile, which is dirty already).
func (r *workerRegistry) putBack(ws []*store.Worker) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, w := range ws {
		r.dirty[workerKey{w.KeyID, w.ID}] = true
	}
}

// connected counts the workers seen at or after since, and forgets those
// not seen for long before it.
func (r *workerRegistry) connected(since, forget time.Time) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for k, w := range r.seen {
		switch {
		case !w.LastSeenAt.Before(since):
			n++
		case w.LastSeenAt.Before(forget) && !r.dirty[k]:
			delete(r.seen, k)
		}
	}
	return n
}

// workerStore is what the registry flusher writes to.
type workerStore interface {
	UpsertWorkers(ctx context.Context, workers []*store.Worker) error
	DeleteWorkersBefore(ctx context.Context, before time.Time) (int, error)
}

// workerForgetAfter is how long a worker not seen stays listed.
const workerForgetAfter = 24 * time.Hour

// WorkerRegistryFlusher writes the node's worker sightings to the store on
// its own scheduler, and deletes rows of workers gone for a day.
type WorkerRegistryFlusher struct {
	schedulerLoop
	store    workerStore
	registry *workerRegistry
	leaseTTL time.Duration
	prunedAt time.Time // when rows of workers gone for a day were last deleted
}

func newWorkerRegistryFlusher(base baseService, cfg schedulerConfig, st workerStore, r *workerRegistry, leaseTTL time.Duration,
	m *metrics.Metrics, sig *schedulerSignals) *WorkerRegistryFlusher {
	f := &WorkerRegistryFlusher{store: st, registry: r, leaseTTL: leaseTTL}
	f.schedulerLoop = newSchedulerLoop(base, cfg, m, sig, f.tick)
	return f
}

func (f *WorkerRegistryFlusher) tick(ctx context.Context) error {
	now := f.clock.Now()
	f.metrics.RemoteWorkers.Set(float64(f.registry.connected(now.Add(-f.leaseTTL), now.Add(-workerForgetAfter))))
	changed := f.registry.take()
	if len(changed) > 0 {
		qctx, cancel := f.query(ctx)
		err := f.store.UpsertWorkers(qctx, changed)
		cancel()
		if err != nil {
			f.registry.putBack(changed)
			return err
		}
	}
	if now.Sub(f.prunedAt) < time.Hour {
		return nil
	}
	qctx, cancel := f.query(ctx)
	defer cancel()
	if _, err := f.store.DeleteWorkersBefore(qctx, now.Add(-workerForgetAfter)); err != nil {
		return err
	}
	f.prunedAt = now
	return nil
}
