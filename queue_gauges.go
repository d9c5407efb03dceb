package docket

import (
	"context"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/metrics"
)

// observeQueue registers the gauges read from the store at scrape time
// (queued, running, in flight, capacity in use and oldest queued age per
// pool; at most one read per second whatever the scrape rate) and the
// scheduler lag gauge.
func (s *Server) observeQueue() {
	cfg := s.svc.Config()
	capacity := map[dockettype.Pool]int{dockettype.PoolOnline: cfg.Online.Capacity, dockettype.PoolOffline: cfg.Offline.Capacity}
	log := s.log.With("component", "metrics")
	s.metrics.ObserveQueue(metrics.QueueGauges{
		Now: s.clock.Now,
		Read: func(ctx context.Context) ([]metrics.PoolQueue, error) {
			st, err := s.store.Stats(ctx)
			if err != nil {
				log.WarnContext(ctx, "pool gauges not read", "code", dockettype.CodeStoreUnavailable, "op", "stats")
				return nil, err
			}
			out := make([]metrics.PoolQueue, len(st.Pools))
			for i, p := range st.Pools {
				out[i] = metrics.PoolQueue{Pool: p.Pool, Capacity: capacity[p.Pool], InFlight: p.InFlight,
					Queued: p.Queued, Running: p.Running, RemoteRunning: p.RemoteRunning, OldestQueuedAt: p.OldestQueuedAt}
			}
			return out, nil
		},
	})
	s.metrics.ObserveSchedulerLag(s.clock.Now)
}
