package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/httpapi/httpapitest"
)

// A task whose run was cancelled is retried through the API: it runs
// again with the same input and ID, its key still answers it, the history
// names who retried it, and other tenants cannot touch it.
func TestRetryThroughAPI(t *testing.T) {
	t.Parallel()
	s := httpapitest.New(t, httpapitest.Options{})
	later := time.Now().UTC().Add(time.Hour).Format(time.RFC3339)
	body := `{"workflow":"demo.echo","input":{"n":7},"run_at":"` + later + `"}`
	task := mustSubmit(t, s.URL, s.Key, "retry-1", body)
	post := func(path, key string) response {
		return call(t, s.URL, request{method: http.MethodPost, path: path, key: key})
	}
	post("/v1/tasks/"+task.ID+"/cancel", s.Key).wantStatus(t, http.StatusOK)

	other, err := s.NewKey(t.Context(), "globex", "bob")
	if err != nil {
		t.Fatal(err)
	}
	post("/v1/tasks/"+task.ID+"/retry", other).wantError(t, http.StatusNotFound, dockettype.CodeNotFound)
	in := call(t, s.URL, request{method: http.MethodGet, path: "/v1/tasks/" + task.ID + "/input", key: s.Key})
	in.wantStatus(t, http.StatusOK)
	if got := strings.TrimSpace(string(in.body)); got != `{"n":7}` {
		t.Errorf("input = %s, want {\"n\":7} as admitted", got)
	}
	call(t, s.URL, request{method: http.MethodGet, path: "/v1/tasks/" + task.ID + "/input", key: other}).
		wantError(t, http.StatusNotFound, dockettype.CodeNotFound)

	r := post("/v1/tasks/"+task.ID+"/retry", s.Key)
	r.wantStatus(t, http.StatusOK)
	if got := r.task(t); got.ID != task.ID || got.Attempt != 0 || got.State.Terminal() {
		t.Errorf("retried: %+v, want %s live at attempt 0", got, task.ID)
	}
	done := call(t, s.URL, request{method: http.MethodGet, path: "/v1/tasks/" + task.ID + "?wait=30s", key: s.Key}).task(t)
	if done.State != dockettype.StateSucceeded || string(done.Result) != `{"n":7}` {
		t.Errorf("after the retry: %s with %s, want succeeded with the input", done.State, done.Result)
	}
	post("/v1/tasks/"+task.ID+"/retry", s.Key).wantError(t, http.StatusConflict, dockettype.CodeNotRetryable)
	replay := submit(t, s.URL, s.Key, "retry-1", body)
	replay.wantStatus(t, http.StatusOK)
	if got := replay.task(t); got.ID != task.ID {
		t.Errorf("replay of the key answered %s, want %s", got.ID, task.ID)
	}
	ev := call(t, s.URL, request{method: http.MethodGet, path: "/v1/tasks/" + task.ID + "/events", key: s.Key})
	ev.wantStatus(t, http.StatusOK)
	if !strings.Contains(string(ev.body), `"code":"retried"`) || !strings.Contains(string(ev.body), `"role":"member"`) {
		t.Errorf("events %s, want a retried event by a member key", ev.body)
	}

	// An admin retries any tenant's task.
	theirs := mustSubmit(t, s.URL, other, "theirs", body)
	post("/v1/tasks/"+theirs.ID+"/cancel", other).wantStatus(t, http.StatusOK)
	admin := s.NewAdminKeyFor(t, "ops", "root")
	post("/v1/tasks/"+theirs.ID+"/retry", admin).wantStatus(t, http.StatusOK)
}

// A retry counts against the tenant's limit like an admission.
func TestRetryRefusedAtTenantLimit(t *testing.T) {
	t.Parallel()
	s := httpapitest.New(t, httpapitest.Options{})
	later := time.Now().UTC().Add(time.Hour).Format(time.RFC3339)
	a := mustSubmit(t, s.URL, s.Key, "a", `{"workflow":"demo.echo","run_at":"`+later+`"}`)
	call(t, s.URL, request{method: http.MethodPost, path: "/v1/tasks/" + a.ID + "/cancel", key: s.Key}).wantStatus(t, http.StatusOK)
	mustSubmit(t, s.URL, s.Key, "b", `{"workflow":"demo.echo","run_at":"`+later+`"}`)
	admin := s.NewAdminKeyFor(t, "ops", "root")
	call(t, s.URL, request{method: http.MethodPatch, path: "/v1/admin/tenants/" + httpapitest.Tenant, key: admin,
		body: `{"max_in_flight":1}`}).wantStatus(t, http.StatusOK)
	r := call(t, s.URL, request{method: http.MethodPost, path: "/v1/tasks/" + a.ID + "/retry", key: s.Key})
	r.wantError(t, http.StatusTooManyRequests, dockettype.CodeTenantQuotaExceeded)
	if r.header.Get("Retry-After") == "" {
		t.Error("429 without Retry-After")
	}
}
