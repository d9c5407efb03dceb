package node

import (
	"context"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/metrics"
)

// observePools registers the workers and busy workers of this node's pools.
func (n *Node) observePools() {
	n.metrics.ObservePools(func() []metrics.PoolWorkers {
		stats := n.svc.WorkerStats()
		out := make([]metrics.PoolWorkers, len(stats))
		for i, st := range stats {
			out[i] = metrics.PoolWorkers{Pool: st.Pool, Workers: st.Workers, Busy: st.Busy}
		}
		return out
	})
}

// observeQueue registers the gauges read from the store at scrape time
// (queued, running, in flight, capacity in use and oldest queued age per
// pool, and the bytes all tenants keep; at most one read per second
// whatever the scrape rate) and the
// scheduler lag gauge.
func (n *Node) observeQueue() {
	cfg := n.svc.Config()
	capacity := map[dockettype.Pool]int{dockettype.PoolOnline: cfg.Online.Capacity, dockettype.PoolOffline: cfg.Offline.Capacity}
	log := n.log.With("component", "metrics")
	n.metrics.ObserveQueue(metrics.QueueGauges{
		Now: n.clock.Now,
		Read: func(ctx context.Context) (metrics.QueueRead, error) {
			st, err := n.store.Stats(ctx)
			if err != nil {
				log.WarnContext(ctx, "pool gauges not read", "code", dockettype.CodeStoreUnavailable, "op", "stats")
				return metrics.QueueRead{}, err
			}
			out := metrics.QueueRead{Pools: make([]metrics.PoolQueue, len(st.Pools))}
			for i, p := range st.Pools {
				out.Pools[i] = metrics.PoolQueue{Pool: p.Pool, Capacity: capacity[p.Pool], InFlight: p.InFlight,
					Queued: p.Queued, Running: p.Running, RemoteRunning: p.RemoteRunning, OldestQueuedAt: p.OldestQueuedAt}
			}
			for _, t := range st.Tenants {
				out.StoredBytes += t.StoredBytes
			}
			return out, nil
		},
	})
	n.metrics.ObserveFlow(metrics.FlowGauges{
		Now: n.clock.Now,
		Read: func(ctx context.Context, now time.Time) (map[string]int, error) {
			counts, err := n.store.FlowWaiting(ctx, now)
			if err != nil {
				log.WarnContext(ctx, "flow gauges not read", "code", dockettype.CodeStoreUnavailable, "op", "flow_waiting")
			}
			return counts, err
		},
	})
	n.metrics.ObserveSchedulerLag(n.clock.Now)
}
