package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/httpapi/httpapitest"
	"github.com/docket-dev/docket/internal/queue"
	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/store/faultstore"
)

// GET /v1/admin/tenants lists every tenant by ID with its limits and
// in-flight count.
func TestAdminListTenants(t *testing.T) {
	t.Parallel()
	httpapitest.ForEachDatabase(t, func(t *testing.T, db httpapitest.Database) {
		t.Parallel()
		s := httpapitest.New(t, httpapitest.Options{Store: db.Open(t), Queue: queuedOnly})
		admin := s.NewAdminKeyFor(t, "ops", "root")
		mustSubmit(t, s.URL, s.Key, "k1", echoBody)
		mustSubmit(t, s.URL, s.Key, "k2", echoBody)
		call(t, s.URL, request{method: http.MethodPatch, path: "/v1/admin/tenants/beta", key: admin, body: `{"max_in_flight":7,"weight":3}`}).
			wantStatus(t, http.StatusOK)

		r := call(t, s.URL, request{method: http.MethodGet, path: "/v1/admin/tenants", key: admin})
		r.wantStatus(t, http.StatusOK)
		var got struct {
			Tenants []tenantAnswer `json:"tenants"`
		}
		r.decode(t, &got)
		acme, err := s.Store.GetTenant(context.Background(), httpapitest.Tenant)
		if err != nil {
			t.Fatal(err)
		}
		want := []tenantAnswer{
			{"acme", acme.MaxInFlight, 1, 2},
			{"beta", 7, 3, 0},
			{"ops", acme.MaxInFlight, 1, 0},
		}
		if !slices.Equal(got.Tenants, want) {
			t.Fatalf("tenants = %+v, want %+v", got.Tenants, want)
		}
		call(t, s.URL, request{method: http.MethodGet, path: "/v1/admin/tenants?limit=1", key: admin}).
			wantError(t, http.StatusBadRequest, dockettype.CodeInvalidRequest)
	})
}

type poolAnswer struct {
	Name           dockettype.Pool `json:"name"`
	Capacity       int             `json:"capacity"`
	InFlight       int             `json:"in_flight"`
	Workers        int             `json:"workers"`
	Busy           int             `json:"busy"`
	Queued         int             `json:"queued"`
	Running        int             `json:"running"`
	OldestQueuedAt *time.Time      `json:"oldest_queued_at"`
}

type schedulerAnswer struct {
	Name          string     `json:"name"`
	LastRunAt     *time.Time `json:"last_run_at"`
	LastSuccessAt *time.Time `json:"last_success_at"`
	Runs          int64      `json:"runs"`
	Failures      int64      `json:"failures"`
}

type statsAnswer struct {
	Pools      []poolAnswer      `json:"pools"`
	Tenants    []tenantAnswer    `json:"tenants"`
	Schedulers []schedulerAnswer `json:"schedulers"`
}

// GET /v1/admin/stats: the store's counts per pool and tenant, with this
// node's capacity, workers, busy workers and schedulers.
func TestAdminStats(t *testing.T) {
	t.Parallel()
	httpapitest.ForEachDatabase(t, func(t *testing.T, db httpapitest.Database) {
		t.Parallel()
		var rec *startRecorder
		s := httpapitest.New(t, httpapitest.Options{
			Store: db.Open(t),
			Queue: queue.Config{Online: queue.PoolConfig{Workers: 1, Capacity: 100}, Offline: queue.PoolConfig{Workers: -1, Capacity: -1}},
			WrapRuntime: func(rt queue.Runtime) queue.Runtime {
				rec = newStartRecorder(rt)
				return rec
			},
		})
		admin := s.NewAdminKeyFor(t, "ops", "root")
		// The one online worker is busy with a long sleep (cancelled when
		// the stack stops); three more tasks wait behind it.
		sleeper := mustSubmit(t, s.URL, s.Key, "sleep", `{"workflow":"demo.sleep","input":{"ms":600000}}`)
		if id := <-rec.started; id != sleeper.ID {
			t.Fatalf("started %s, want the sleeper", id)
		}
		var first *dockettype.Task
		for _, k := range []string{"a", "b", "c"} {
			task := mustSubmit(t, s.URL, s.Key, k, echoBody)
			if first == nil {
				first = task
			}
		}
		mustSubmit(t, s.URL, s.Key, "off", `{"workflow":"demo.echo","pool":"offline","input":1}`)

		r := call(t, s.URL, request{method: http.MethodGet, path: "/v1/admin/stats", key: admin})
		r.wantStatus(t, http.StatusOK)
		var got statsAnswer
		r.decode(t, &got)
		var raw map[string]json.RawMessage
		r.decode(t, &raw)
		if len(raw) != 4 {
			t.Fatalf("stats has members %v, want pools, tenants, schedulers, flow", raw)
		}
		if len(got.Pools) != 2 {
			t.Fatalf("pools = %+v", got.Pools)
		}
		online, offline := got.Pools[0], got.Pools[1]
		if online.OldestQueuedAt == nil || !online.OldestQueuedAt.Equal(first.CreatedAt) {
			t.Errorf("online oldest queued = %v, want the first waiting task's creation %s", online.OldestQueuedAt, first.CreatedAt)
		}
		online.OldestQueuedAt = nil
		if want := (poolAnswer{Name: "online", Capacity: 100, InFlight: 4, Workers: 1, Busy: 1, Queued: 3, Running: 1}); online != want {
			t.Errorf("online = %+v, want %+v", online, want)
		}
		if offline.OldestQueuedAt == nil {
			t.Errorf("offline oldest queued = nil, want the waiting task's creation")
		}
		offline.OldestQueuedAt = nil
		if want := (poolAnswer{Name: "offline", Capacity: 0, InFlight: 1, Workers: 0, Busy: 0, Queued: 1, Running: 0}); offline != want {
			t.Errorf("offline = %+v, want %+v (capacity 0: unlimited)", offline, want)
		}
		var acme *tenantAnswer
		for i := range got.Tenants {
			if got.Tenants[i].ID == "acme" {
				acme = &got.Tenants[i]
			}
		}
		if acme == nil || acme.InFlight != 5 {
			t.Errorf("tenants = %+v, want acme with 5 in flight", got.Tenants)
		}
		var names []string
		for _, sc := range got.Schedulers {
			names = append(names, sc.Name)
			if sc.Failures > sc.Runs || (sc.Runs > 0) != (sc.LastRunAt != nil) {
				t.Errorf("scheduler %+v: inconsistent counters", sc)
			}
		}
		want := []string{"bulk", "deadline", "heartbeat", "recovery", "schedules", "workers"}
		if db.Name == "postgres" { // the store vacuums its live table: a scheduler of the node
			want = []string{"bulk", "deadline", "heartbeat", "recovery", "schedules", "vacuum", "workers"}
		}
		if !slices.Equal(names, want) {
			t.Errorf("schedulers = %v, want %v", names, want)
		}
	})
}

// An admin call the store cannot answer is 503 store_unavailable (500
// internal for a database error that is not an outage), counted, with
// nothing of the database's text in the answer or the log.
func TestAdminStoreUnavailable(t *testing.T) {
	t.Parallel()
	var fs *faultstore.Store
	s := httpapitest.New(t, httpapitest.Options{Queue: queuedOnly, WrapStore: func(st store.Store) store.Store {
		fs = faultstore.New(st)
		return fs
	}})
	admin := s.NewAdminKeyFor(t, "ops", "root")
	calls := []struct {
		op  string
		req request
	}{
		{"list_tenants", request{method: http.MethodGet, path: "/v1/admin/tenants"}},
		{"ensure_tenant", request{method: http.MethodPost, path: "/v1/admin/keys", body: `{"tenant":"beta","principal":"bob"}`}},
		{"create_api_key", request{method: http.MethodPost, path: "/v1/admin/keys", body: `{"tenant":"beta","principal":"bob"}`}},
		{"list_api_keys", request{method: http.MethodGet, path: "/v1/admin/keys"}},
		{"revoke_api_key", request{method: http.MethodPost, path: "/v1/admin/keys/key_x/revoke"}},
		{"stats", request{method: http.MethodGet, path: "/v1/admin/stats"}},
		{"throughput", request{method: http.MethodGet, path: "/v1/admin/stats/throughput"}},
	}
	dbErr := &store.DatabaseError{Op: "x", Backend: store.BackendPostgres, Code: "23505", Err: httpapitest.ErrOutage}
	for _, c := range calls {
		c.req.key = admin
		fs.Set(c.op, faultstore.Fail(httpapitest.ErrOutage))
		r := call(t, s.URL, c.req)
		r.wantError(t, http.StatusServiceUnavailable, dockettype.CodeStoreUnavailable)
		assertNoLeak(t, r.body)
		fs.Set(c.op, faultstore.Fail(dbErr))
		r = call(t, s.URL, c.req)
		r.wantError(t, http.StatusInternalServerError, dockettype.CodeInternal)
		assertNoLeak(t, r.body)
		fs.Set(c.op, nil)
	}
	// Counted under the store operation that failed (the admin_keys label
	// of before counted these four together: 8).
	for _, op := range []string{"ensure_tenant", "create_api_key", "list_api_keys", "revoke_api_key"} {
		if n := testutil.ToFloat64(s.Metrics.StoreErrors.WithLabelValues(op)); n != 2 {
			t.Errorf("store_errors_total{%s} = %v, want 2", op, n)
		}
	}
	if keys, err := s.Store.ListAPIKeys(context.Background(), "beta"); err != nil || len(keys) != 0 {
		t.Fatalf("beta's keys after failed creations: %d, %v", len(keys), err)
	}
}
