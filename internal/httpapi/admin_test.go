package httpapi_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/httpapi"
	"github.com/docket-dev/docket/internal/httpapi/httpapitest"
)

type tenantAnswer struct {
	ID          string `json:"id"`
	MaxInFlight int    `json:"max_in_flight"`
	Weight      int    `json:"weight"`
	InFlight    int    `json:"in_flight"`
}

// Every /v1/admin/ call with a member key is 403 forbidden, whatever the
// route, method or path; without a key it is 401.
func TestAdminNeedsAnAdminKey(t *testing.T) {
	t.Parallel()
	s := httpapitest.New(t, httpapitest.Options{Queue: queuedOnly})
	calls := []struct{ method, path, body string }{
		{http.MethodPatch, "/v1/admin/tenants/acme", `{"max_in_flight":1}`},
		{http.MethodGet, "/v1/admin/tenants/acme", ""}, // a method the route does not serve
		{http.MethodGet, "/v1/admin/tenants", ""},
		{http.MethodGet, "/v1/admin/keys", ""},
		{http.MethodPost, "/v1/admin/keys", `{"tenant":"acme","principal":"x"}`},
		{http.MethodGet, "/v1/admin/stats", ""},
		{http.MethodGet, "/v1/admin/stats/throughput", ""},
		{http.MethodGet, "/v1/admin/rules", ""},
		{http.MethodPost, "/v1/admin/keys/key_x/revoke", ""},
		{http.MethodDelete, "/v1/admin/anything/else", ""},
	}
	for _, c := range calls {
		r := call(t, s.URL, request{method: c.method, path: c.path, key: s.Key, body: c.body})
		r.wantError(t, http.StatusForbidden, dockettype.CodeForbidden)
		r = call(t, s.URL, request{method: c.method, path: c.path, body: c.body})
		r.wantError(t, http.StatusUnauthorized, dockettype.CodeUnauthenticated)
	}
	// The member's refused calls changed nothing.
	if keys, err := s.Store.ListAPIKeys(context.Background(), ""); err != nil || len(keys) != 1 {
		t.Fatalf("keys after a member's POST /v1/admin/keys = %d, %v; want only the stack's", len(keys), err)
	}
	tn, err := s.Store.GetTenant(context.Background(), httpapitest.Tenant)
	if err != nil || tn.MaxInFlight == 1 {
		t.Fatalf("tenant after a member's PATCH = %+v, %v", tn, err)
	}

	admin, err := s.NewAdminKey(context.Background(), "ops", "root")
	if err != nil {
		t.Fatal(err)
	}
	r := call(t, s.URL, request{method: http.MethodGet, path: "/v1/admin/tenants/acme", key: admin})
	r.wantError(t, http.StatusMethodNotAllowed, dockettype.CodeMethodNotAllowed)
	if r.header.Get("Allow") != "PATCH" {
		t.Errorf("Allow = %q", r.header.Get("Allow"))
	}
	call(t, s.URL, request{method: http.MethodGet, path: "/v1/admin/anything/else", key: admin}).
		wantError(t, http.StatusNotFound, dockettype.CodeNotFound)
	// An admin key still reads its own tenant's tasks, and only those.
	call(t, s.URL, request{method: http.MethodGet, path: "/v1/tasks", key: admin}).wantStatus(t, http.StatusOK)
}

// PATCH /v1/admin/tenants/{id} changes only the fields given; a missing
// tenant is created with the default limit.
func TestAdminPatchTenant(t *testing.T) {
	t.Parallel()
	s := httpapitest.New(t, httpapitest.Options{Queue: queuedOnly, API: httpapi.Options{DefaultTenantLimit: 50}})
	admin, err := s.NewAdminKey(context.Background(), "ops", "root")
	if err != nil {
		t.Fatal(err)
	}
	patch := func(id, body string) response {
		return call(t, s.URL, request{method: http.MethodPatch, path: "/v1/admin/tenants/" + id, key: admin, body: body})
	}
	mustSubmit(t, s.URL, s.Key, "k", echoBody)

	steps := []struct {
		body string
		want tenantAnswer
	}{
		{`{"max_in_flight":10,"weight":3}`, tenantAnswer{"acme", 10, 3, 1}},
		{`{"weight":5}`, tenantAnswer{"acme", 10, 5, 1}},
		{`{"max_in_flight":0}`, tenantAnswer{"acme", 0, 5, 1}},
		{`{}`, tenantAnswer{"acme", 0, 5, 1}},
	}
	for _, st := range steps {
		r := patch("acme", st.body)
		r.wantStatus(t, http.StatusOK)
		var got tenantAnswer
		r.decode(t, &got)
		if got != st.want {
			t.Fatalf("PATCH %s = %+v, want %+v", st.body, got, st.want)
		}
	}
	var got tenantAnswer
	r := patch("newco", `{"weight":2}`)
	r.wantStatus(t, http.StatusOK)
	if r.decode(t, &got); got != (tenantAnswer{"newco", 50, 2, 0}) {
		t.Fatalf("new tenant = %+v, want the default limit 50 and weight 2", got)
	}

	for _, body := range []string{`{"weight":0}`, `{"max_in_flight":-1}`, `{"max_in_flight":2147483648}`,
		`{"weight":"3"}`, `{"name":"x"}`, `{"weight":1,"weight":2}`, `[]`, `{"weight":1.5}`} {
		patch("acme", body).wantError(t, http.StatusBadRequest, dockettype.CodeInvalidRequest)
	}
	patch("bad%20name", `{"weight":1}`).wantError(t, http.StatusBadRequest, dockettype.CodeInvalidRequest)
	if got, _ := s.Store.GetTenant(context.Background(), "acme"); got.MaxInFlight != 0 || got.Weight != 5 {
		t.Fatalf("refused patches changed the tenant: %+v", got)
	}
}
