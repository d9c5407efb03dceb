package httpapi

import (
	"net/http"
	"time"

	"github.com/docket-dev/docket/dockettype"
)

// statsBody is the answer of GET /v1/admin/stats.
type statsBody struct {
	Pools      []poolStatsBody      `json:"pools"`
	Tenants    []tenantBody         `json:"tenants"`
	Schedulers []schedulerStatsBody `json:"schedulers"`
	Flow       *flowStatsBody       `json:"flow"`
}

// poolStatsBody is one pool. Capacity, in_flight, queued and running are
// the whole service's (the store's counts; capacity 0: unlimited); workers
// and busy are this node's.
type poolStatsBody struct {
	Name           dockettype.Pool `json:"name"`
	Capacity       int             `json:"capacity"`
	InFlight       int             `json:"in_flight"`
	Workers        int             `json:"workers"`
	Busy           int             `json:"busy"`
	Queued         int             `json:"queued"`
	Running        int             `json:"running"`
	OldestQueuedAt *time.Time      `json:"oldest_queued_at"`
}

// schedulerStatsBody is one scheduler of this node since it started.
type schedulerStatsBody struct {
	Name          string     `json:"name"`
	LastRunAt     *time.Time `json:"last_run_at"`
	LastSuccessAt *time.Time `json:"last_success_at"`
	Runs          int64      `json:"runs"`
	Failures      int64      `json:"failures"`
}

// stats serves GET /v1/admin/stats: per pool (capacity, in flight,
// workers, busy, queued, running), per tenant (in flight and limits), per
// scheduler (last run, runs, failures). The store's part costs indexed
// counts, whatever the number of finished tasks.
func (s *server) stats(w http.ResponseWriter, r *http.Request, _ dockettype.Principal) {
	if _, err := queryParams(r); err != nil {
		writeError(w, r, err)
		return
	}
	st, err := s.adminStore.Stats(r.Context())
	if err != nil {
		writeError(w, r, s.adminStoreError(r.Context(), "stats", err))
		return
	}
	flow, rules, err := s.flowStats(r.Context())
	if err != nil {
		writeError(w, r, s.adminStoreError(r.Context(), "list_flow_rules", err))
		return
	}
	cfg := s.node.Config()
	capacity := map[dockettype.Pool]int{dockettype.PoolOnline: cfg.Online.Capacity, dockettype.PoolOffline: cfg.Offline.Capacity}
	out := statsBody{Pools: []poolStatsBody{}, Tenants: withFlow(tenantsOf(st.Tenants, s.storageQuota), rules), Schedulers: []schedulerStatsBody{},
		Flow: flow}
	workers := map[dockettype.Pool]poolStatsBody{}
	for _, ws := range s.node.WorkerStats() {
		workers[ws.Pool] = poolStatsBody{Workers: ws.Workers, Busy: ws.Busy}
	}
	for _, p := range st.Pools {
		out.Pools = append(out.Pools, poolStatsBody{
			Name: p.Pool, Capacity: max(capacity[p.Pool], 0), InFlight: p.InFlight,
			Workers: workers[p.Pool].Workers, Busy: workers[p.Pool].Busy,
			Queued: p.Queued, Running: p.Running, OldestQueuedAt: p.OldestQueuedAt,
		})
	}
	for _, sc := range s.node.SchedulerStats() {
		out.Schedulers = append(out.Schedulers, schedulerStatsBody{
			Name: sc.Name, LastRunAt: sc.LastRunAt, LastSuccessAt: sc.LastSuccessAt, Runs: sc.Runs, Failures: sc.Failures,
		})
	}
	writeJSON(w, r, http.StatusOK, out)
}
