package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/httpapi/httpapitest"
	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/store/faultstore"
)

// A store whose connections are all in use (store.ErrBusy) is not an
// outage: the request is shed with 429 too_many_requests and Retry-After,
// for a task read and an admin call alike, never 503 store_unavailable.
func TestStoreBusyIsTooManyRequests(t *testing.T) {
	t.Parallel()
	var fs *faultstore.Store
	s := httpapitest.New(t, httpapitest.Options{Queue: queuedOnly, WrapStore: func(st store.Store) store.Store {
		fs = faultstore.New(st)
		return fs
	}})
	admin := s.NewAdminKeyFor(t, "ops", "root")
	busy := faultstore.Fail(store.ErrBusy)
	for _, c := range []struct {
		op  string
		req request
	}{
		{"get_task", request{method: http.MethodGet, path: "/v1/tasks/0190c0de-0000-7000-8000-000000000001", key: s.Key}},
		{"list_tenants", request{method: http.MethodGet, path: "/v1/admin/tenants", key: admin}},
	} {
		fs.Set(c.op, busy)
		r := call(t, s.URL, c.req)
		r.wantError(t, http.StatusTooManyRequests, dockettype.CodeTooManyRequests)
		if r.header.Get("Retry-After") == "" {
			t.Errorf("%s on a busy store: no Retry-After", c.op)
		}
		fs.Set(c.op, nil)
	}
}
