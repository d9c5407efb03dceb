package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/httpapi"
	"github.com/docket-dev/docket/internal/httpapi/httpapitest"
	"github.com/docket-dev/docket/internal/logtest"
	"github.com/docket-dev/docket/internal/queue"
	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/store/faultstore"
)

// echoBody is a demo.echo submission whose input carries the canary.
var echoBody = `{"workflow":"demo.echo","input":{"msg":"` + logtest.Canary + `","n":[1,2]}}`

// queuedOnly keeps every task queued: no workers claim.
var queuedOnly = queue.Config{Online: queue.PoolConfig{Workers: -1}, Offline: queue.PoolConfig{Workers: -1}}

func TestSubmitNewAndReplay(t *testing.T) {
	t.Parallel()
	s := httpapitest.New(t, httpapitest.Options{Queue: queuedOnly})

	r := submit(t, s.URL, s.Key, "k-1", echoBody)
	r.wantStatus(t, http.StatusCreated)
	created := r.task(t)
	if created.Tenant != "acme" || created.Author != "alice" || created.Workflow != "demo.echo" ||
		created.Pool != dockettype.PoolOnline || created.State != dockettype.StateQueued || created.ID == "" {
		t.Fatalf("created task = %+v", created)
	}
	if got := r.header.Get("Location"); got != "/v1/tasks/"+created.ID {
		t.Errorf("Location = %q", got)
	}
	// A task without a result or error shows them as null.
	var raw map[string]json.RawMessage
	r.decode(t, &raw)
	if string(raw["result"]) != "null" || string(raw["error"]) != "null" {
		t.Errorf("result = %s, error = %s, want null", raw["result"], raw["error"])
	}
	if _, ok := raw["lease_epoch"]; ok {
		t.Error("the lease epoch is serialized")
	}

	// Same key, same body: the same task, 200.
	r = submit(t, s.URL, s.Key, "k-1", echoBody)
	r.wantStatus(t, http.StatusOK)
	if got := r.task(t); got.ID != created.ID {
		t.Fatalf("replay id = %s, want %s", got.ID, created.ID)
	}
	// Same key, same request with other whitespace: still a replay.
	reformatted := "{\n  \"workflow\": \"demo.echo\",\n  \"input\": { \"msg\" : \"" + logtest.Canary + "\", \"n\": [ 1, 2 ] }\n}\n"
	r = submit(t, s.URL, s.Key, "k-1", reformatted)
	r.wantStatus(t, http.StatusOK)
	if got := r.task(t); got.ID != created.ID {
		t.Fatalf("reformatted replay id = %s, want %s", got.ID, created.ID)
	}
	// Same key, another input: 409.
	submit(t, s.URL, s.Key, "k-1", `{"workflow":"demo.echo","input":{"msg":"other"}}`).
		wantError(t, http.StatusConflict, dockettype.CodeIdempotencyConflict)
	// The same key of another tenant is another binding.
	globex, err := s.NewKey(context.Background(), "globex", "bob")
	if err != nil {
		t.Fatal(err)
	}
	other := mustSubmit(t, s.URL, globex, "k-1", echoBody)
	if other.ID == created.ID || other.Tenant != "globex" || other.Author != "bob" {
		t.Fatalf("globex task = %+v", other)
	}
	if n := testutil.ToFloat64(s.Metrics.HTTPRequests.WithLabelValues("POST /v1/tasks", "201")); n != 2 {
		t.Errorf("http_requests_total{POST /v1/tasks,201} = %v, want 2", n)
	}
}

func TestSubmitInvalid(t *testing.T) {
	t.Parallel()
	s := httpapitest.New(t, httpapitest.Options{Queue: queuedOnly})
	tests := []struct {
		name   string
		body   string
		header map[string]string // replaces the default Idempotency-Key header
		code   dockettype.Code
	}{
		{name: "malformed JSON", body: `{"workflow":"demo.echo",`, code: dockettype.CodeInvalidRequest},
		{name: "author field", body: `{"workflow":"demo.echo","author":"mallory"}`, code: dockettype.CodeInvalidRequest},
		{name: "tenant field", body: `{"workflow":"demo.echo","tenant":"globex"}`, code: dockettype.CodeInvalidRequest},
		{name: "field in another case", body: `{"Workflow":"demo.echo"}`, code: dockettype.CodeInvalidRequest},
		{name: "duplicate field", body: `{"workflow":"demo.echo","workflow":"demo.fail"}`, code: dockettype.CodeInvalidRequest},
		{name: "trailing garbage", body: `{"workflow":"demo.echo"} x`, code: dockettype.CodeInvalidRequest},
		{name: "second object", body: `{"workflow":"demo.echo"}{}`, code: dockettype.CodeInvalidRequest},
		{name: "array body", body: `[{"workflow":"demo.echo"}]`, code: dockettype.CodeInvalidRequest},
		{name: "null body", body: `null`, code: dockettype.CodeInvalidRequest},
		{name: "string body", body: `"demo.echo"`, code: dockettype.CodeInvalidRequest},
		{name: "missing workflow", body: `{"input":{}}`, code: dockettype.CodeInvalidRequest},
		{name: "empty workflow", body: `{"workflow":""}`, code: dockettype.CodeInvalidRequest},
		{name: "numeric workflow", body: `{"workflow":7}`, code: dockettype.CodeInvalidRequest},
		{name: "fractional priority", body: `{"workflow":"demo.echo","priority":1.5}`, code: dockettype.CodeInvalidRequest},
		{name: "string timeout", body: `{"workflow":"demo.echo","timeout_ms":"10"}`, code: dockettype.CodeInvalidRequest},
		{name: "priority out of range", body: `{"workflow":"demo.echo","priority":5000}`, code: dockettype.CodeInvalidRequest},
		{name: "unknown pool", body: `{"workflow":"demo.echo","pool":"batch"}`, code: dockettype.CodeInvalidRequest},
		{name: "unknown workflow", body: `{"workflow":"demo.nope","input":{}}`, code: dockettype.CodeUnknownWorkflow},
		{name: "missing idempotency key", body: echoBody, header: map[string]string{}, code: dockettype.CodeInvalidRequest},
		{name: "idempotency key with a space", body: echoBody, header: map[string]string{"Idempotency-Key": "a b"}, code: dockettype.CodeInvalidRequest},
		{name: "idempotency key too long", body: echoBody, header: map[string]string{"Idempotency-Key": strings.Repeat("k", 256)}, code: dockettype.CodeInvalidRequest},
		{name: "text content type", body: echoBody, header: map[string]string{"Idempotency-Key": "k", "Content-Type": "text/plain"}, code: dockettype.CodeInvalidRequest},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			header := tt.header
			if header == nil {
				header = map[string]string{"Idempotency-Key": fmt.Sprintf("invalid-%d", i)}
			}
			r := call(t, s.URL, request{method: http.MethodPost, path: "/v1/tasks", key: s.Key, body: tt.body, header: header})
			r.wantError(t, http.StatusBadRequest, tt.code)
			if strings.Contains(string(r.body), logtest.Canary) {
				t.Errorf("the answer echoes the payload: %s", r.body)
			}
		})
	}
	// A key of exactly 255 visible characters and a JSON content type with
	// a charset are accepted.
	r := call(t, s.URL, request{method: http.MethodPost, path: "/v1/tasks", key: s.Key, body: echoBody, header: map[string]string{
		"Idempotency-Key": strings.Repeat("~", 255), "Content-Type": "application/json; charset=utf-8",
	}})
	r.wantStatus(t, http.StatusCreated)
	// Nothing invalid was admitted.
	var list struct{ Tasks []*dockettype.Task }
	call(t, s.URL, request{method: http.MethodGet, path: "/v1/tasks", key: s.Key}).decode(t, &list)
	if len(list.Tasks) != 1 {
		t.Fatalf("%d tasks admitted, want 1", len(list.Tasks))
	}
}

func TestSubmitQueueFull(t *testing.T) {
	t.Parallel()
	s := httpapitest.New(t, httpapitest.Options{Queue: queue.Config{
		Online: queue.PoolConfig{Workers: -1, Capacity: 1}, RetryAfter: 1500 * time.Millisecond,
	}})
	mustSubmit(t, s.URL, s.Key, "first", echoBody)
	r := submit(t, s.URL, s.Key, "second", echoBody)
	r.wantError(t, http.StatusTooManyRequests, dockettype.CodeQueueFull)
	if got := r.header.Get("Retry-After"); got != "2" {
		t.Errorf("Retry-After = %q, want 2 (1.5s rounded up)", got)
	}
}

func TestSubmitTenantQuota(t *testing.T) {
	t.Parallel()
	s := httpapitest.New(t, httpapitest.Options{Queue: queuedOnly})
	if err := s.SetTenantLimit(context.Background(), "acme", 1); err != nil {
		t.Fatal(err)
	}
	mustSubmit(t, s.URL, s.Key, "first", echoBody)
	r := submit(t, s.URL, s.Key, "second", echoBody)
	r.wantError(t, http.StatusTooManyRequests, dockettype.CodeTenantQuotaExceeded)
	if got := r.header.Get("Retry-After"); got != "1" {
		t.Errorf("Retry-After = %q, want 1", got)
	}
	// Another tenant is not limited by acme's quota.
	globex, err := s.NewKey(context.Background(), "globex", "bob")
	if err != nil {
		t.Fatal(err)
	}
	mustSubmit(t, s.URL, globex, "first", echoBody)
}

func TestSubmitPayloadTooLarge(t *testing.T) {
	t.Parallel()
	s := httpapitest.New(t, httpapitest.Options{Queue: queuedOnly, API: httpapi.Options{MaxBodyBytes: 256}})
	big := `{"workflow":"demo.echo","input":"` + strings.Repeat(logtest.Canary, 100) + `"}`
	submit(t, s.URL, s.Key, "big", big).wantError(t, http.StatusRequestEntityTooLarge, dockettype.CodePayloadTooLarge)
	// Under the limit is fine.
	mustSubmit(t, s.URL, s.Key, "small", `{"workflow":"demo.echo","input":"`+logtest.Canary+`"}`)
}

func TestUnauthenticated(t *testing.T) {
	t.Parallel()
	s := httpapitest.New(t, httpapitest.Options{Queue: queuedOnly})
	task := mustSubmit(t, s.URL, s.Key, "k", echoBody)
	routes := []struct{ method, path string }{
		{http.MethodPost, "/v1/tasks"},
		{http.MethodGet, "/v1/tasks"},
		{http.MethodGet, "/v1/tasks/" + task.ID},
		{http.MethodGet, "/v1/tasks/" + task.ID + "?wait=1s"},
		{http.MethodPost, "/v1/tasks/" + task.ID + "/cancel"},
		{http.MethodGet, "/v1/tasks/" + task.ID + "/events"},
		{http.MethodGet, "/v1/tasks/" + task.ID + "/evidence"},
	}
	auths := map[string]string{
		"no header":    "",
		"unknown key":  "Bearer dk_" + strings.Repeat("a", 52),
		"not a key":    "Bearer hunter2",
		"basic scheme": "Basic " + s.Key,
		"bare key":     s.Key,
		"empty bearer": "Bearer ",
	}
	for name, authz := range auths {
		for _, rt := range routes {
			t.Run(name+"/"+rt.method+" "+rt.path, func(t *testing.T) {
				header := map[string]string{"Idempotency-Key": "k"}
				if authz != "" {
					header["Authorization"] = authz
				}
				r := call(t, s.URL, request{method: rt.method, path: rt.path, body: echoBody, header: header})
				r.wantError(t, http.StatusUnauthorized, dockettype.CodeUnauthenticated)
				if got := r.header.Get("WWW-Authenticate"); got != "Bearer" {
					t.Errorf("WWW-Authenticate = %q", got)
				}
			})
		}
	}
	// The bearer scheme is case-insensitive.
	r := call(t, s.URL, request{method: http.MethodGet, path: "/v1/tasks/" + task.ID, header: map[string]string{"Authorization": "bearer " + s.Key}})
	r.wantStatus(t, http.StatusOK)
}

func TestOtherTenantsTaskIsNotFound(t *testing.T) {
	t.Parallel()
	s := httpapitest.New(t, httpapitest.Options{Queue: queuedOnly})
	globex, err := s.NewKey(context.Background(), "globex", "bob")
	if err != nil {
		t.Fatal(err)
	}
	task := mustSubmit(t, s.URL, s.Key, "k", echoBody)
	for _, id := range []string{task.ID, "0190c0de-0000-7000-8000-000000000000", "nope", strings.Repeat("x", 200)} {
		key := globex
		if id != task.ID {
			key = s.Key // unknown to everyone
		}
		for _, rt := range []struct{ method, path string }{
			{http.MethodGet, "/v1/tasks/" + id},
			{http.MethodGet, "/v1/tasks/" + id + "?wait=1s"},
			{http.MethodPost, "/v1/tasks/" + id + "/cancel"},
			{http.MethodGet, "/v1/tasks/" + id + "/evidence"},
			{http.MethodGet, "/v1/tasks/" + id + "/events"},
		} {
			r := call(t, s.URL, request{method: rt.method, path: rt.path, key: key})
			r.wantError(t, http.StatusNotFound, dockettype.CodeNotFound)
		}
	}
	// Globex's list does not show acme's task, and acme's task was not
	// cancelled by globex's attempt.
	var list struct{ Tasks []*dockettype.Task }
	call(t, s.URL, request{method: http.MethodGet, path: "/v1/tasks", key: globex}).decode(t, &list)
	if len(list.Tasks) != 0 {
		t.Fatalf("globex lists %d tasks", len(list.Tasks))
	}
	got := call(t, s.URL, request{method: http.MethodGet, path: "/v1/tasks/" + task.ID, key: s.Key})
	got.wantStatus(t, http.StatusOK)
	if st := got.task(t).State; st != dockettype.StateQueued {
		t.Fatalf("state = %s, want queued", st)
	}
}

func TestWaitReturnsResult(t *testing.T) {
	t.Parallel()
	s := httpapitest.New(t, httpapitest.Options{})
	task := mustSubmit(t, s.URL, s.Key, "k", echoBody)
	r := call(t, s.URL, request{method: http.MethodGet, path: "/v1/tasks/" + task.ID + "?wait=5s", key: s.Key})
	r.wantStatus(t, http.StatusOK)
	got := r.task(t)
	if got.State != dockettype.StateSucceeded {
		t.Fatalf("state = %s, want succeeded", got.State)
	}
	want := `{"msg":"` + logtest.Canary + `","n":[1,2]}`
	if string(got.Result) != want {
		t.Fatalf("result = %s, want %s", got.Result, want)
	}
	if got.Error != nil || got.StartedAt == nil || got.FinishedAt == nil || got.Attempt != 1 {
		t.Fatalf("task = %+v", got)
	}
}

func TestWaitInvalid(t *testing.T) {
	t.Parallel()
	s := httpapitest.New(t, httpapitest.Options{Queue: queuedOnly})
	task := mustSubmit(t, s.URL, s.Key, "k", echoBody)
	for _, q := range []string{"wait=abc", "wait=10", "wait=61s", "wait=-1s", "wait=", "wait=1s&wait=2s", "wiat=1s", "wait=%zz"} {
		t.Run(q, func(t *testing.T) {
			r := call(t, s.URL, request{method: http.MethodGet, path: "/v1/tasks/" + task.ID + "?" + q, key: s.Key})
			r.wantError(t, http.StatusBadRequest, dockettype.CodeInvalidRequest)
		})
	}
	// wait=0s answers at once.
	r := call(t, s.URL, request{method: http.MethodGet, path: "/v1/tasks/" + task.ID + "?wait=0s", key: s.Key})
	r.wantStatus(t, http.StatusOK)
}

func TestCancelRunning(t *testing.T) {
	t.Parallel()
	var rec *startRecorder
	s := httpapitest.New(t, httpapitest.Options{WrapRuntime: func(rt queue.Runtime) queue.Runtime {
		rec = newStartRecorder(rt)
		return rec
	}})
	task := mustSubmit(t, s.URL, s.Key, "sleep", `{"workflow":"demo.sleep","input":{"ms":60000}}`)
	if id := <-rec.started; id != task.ID {
		t.Fatalf("started %s, want %s", id, task.ID)
	}
	r := call(t, s.URL, request{method: http.MethodPost, path: "/v1/tasks/" + task.ID + "/cancel", key: s.Key})
	r.wantStatus(t, http.StatusOK)
	cancelled := r.task(t)
	if cancelled.State != dockettype.StateCancelled || cancelled.FinishedAt == nil {
		t.Fatalf("after cancel: %+v", cancelled)
	}
	// Cancelling again returns the terminal task unchanged.
	r = call(t, s.URL, request{method: http.MethodPost, path: "/v1/tasks/" + task.ID + "/cancel", key: s.Key})
	r.wantStatus(t, http.StatusOK)
	if got := r.task(t); got.State != dockettype.StateCancelled || !got.FinishedAt.Equal(*cancelled.FinishedAt) {
		t.Fatalf("second cancel: %+v", got)
	}

	var ev struct{ Events []dockettype.Event }
	r = call(t, s.URL, request{method: http.MethodGet, path: "/v1/tasks/" + task.ID + "/events", key: s.Key})
	r.wantStatus(t, http.StatusOK)
	r.decode(t, &ev)
	want := [][2]dockettype.State{{"", dockettype.StateQueued}, {dockettype.StateQueued, dockettype.StateRunning}, {dockettype.StateRunning, dockettype.StateCancelled}}
	if len(ev.Events) != len(want) {
		t.Fatalf("events = %+v, want %v", ev.Events, want)
	}
	for i, e := range ev.Events {
		if e.From != want[i][0] || e.To != want[i][1] || e.TaskID != task.ID {
			t.Errorf("event %d = %+v, want %v", i, e, want[i])
		}
	}

	r = call(t, s.URL, request{method: http.MethodGet, path: "/v1/tasks/" + task.ID + "/evidence", key: s.Key})
	r.wantStatus(t, http.StatusOK)
	if got := strings.TrimSpace(string(r.body)); got != `{"evidence":[]}` {
		t.Fatalf("evidence = %s", got)
	}
}

func TestListPagination(t *testing.T) {
	t.Parallel()
	s := httpapitest.New(t, httpapitest.Options{Queue: queuedOnly})
	var ids []string
	for i := range 5 {
		ids = append(ids, mustSubmit(t, s.URL, s.Key, fmt.Sprintf("k-%d", i), echoBody).ID)
	}
	globex, err := s.NewKey(context.Background(), "globex", "bob")
	if err != nil {
		t.Fatal(err)
	}
	mustSubmit(t, s.URL, globex, "k-0", echoBody)

	type page struct {
		Tasks []*dockettype.Task `json:"tasks"`
		Next  *string            `json:"next"`
	}
	var got []string
	path := "/v1/tasks?limit=2"
	for pages := 0; ; pages++ {
		if pages > 3 {
			t.Fatal("too many pages")
		}
		var p page
		r := call(t, s.URL, request{method: http.MethodGet, path: path, key: s.Key})
		r.wantStatus(t, http.StatusOK)
		r.decode(t, &p)
		for _, task := range p.Tasks {
			got = append(got, task.ID)
		}
		if p.Next == nil || *p.Next == "" {
			if pages != 2 || len(p.Tasks) != 1 {
				t.Fatalf("last page %d has %d tasks", pages, len(p.Tasks))
			}
			break
		}
		if len(p.Tasks) != 2 {
			t.Fatalf("page %d has %d tasks", pages, len(p.Tasks))
		}
		path = "/v1/tasks?limit=2&after=" + *p.Next
	}
	// Newest first, each task once, acme's only.
	for i := range ids {
		if got[i] != ids[len(ids)-1-i] {
			t.Fatalf("listed %v, want the reverse of %v", got, ids)
		}
	}

	// Filters.
	var p page
	call(t, s.URL, request{method: http.MethodGet, path: "/v1/tasks?state=queued&pool=online", key: s.Key}).decode(t, &p)
	if len(p.Tasks) != 5 || p.Next != nil {
		t.Fatalf("queued online: %d tasks, next %v", len(p.Tasks), p.Next)
	}
	r := call(t, s.URL, request{method: http.MethodGet, path: "/v1/tasks?state=succeeded", key: s.Key})
	if got := strings.TrimSpace(string(r.body)); got != `{"tasks":[]}` {
		t.Fatalf("empty list = %s", got)
	}

	// The workflow filter: one workflow's tasks, by its exact name.
	fail := mustSubmit(t, s.URL, s.Key, "k-fail", `{"workflow":"demo.fail","input":{"code":"demo_failure"}}`)
	newest := slices.Clone(ids)
	slices.Reverse(newest)
	for _, c := range []struct {
		query string
		want  []string
	}{
		{"workflow=demo.fail", []string{fail.ID}},
		{"workflow=demo.echo&state=queued&pool=online", newest},
		{"workflow=demo.echo&limit=2&after=" + ids[2], []string{ids[1], ids[0]}},
		{"workflow=images.resize", nil},
		{"workflow=", append([]string{fail.ID}, newest...)},
	} {
		var p page
		call(t, s.URL, request{method: http.MethodGet, path: "/v1/tasks?" + c.query, key: s.Key}).decode(t, &p)
		var got []string
		for _, task := range p.Tasks {
			got = append(got, task.ID)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("GET /v1/tasks?%s = %v, want %v", c.query, got, c.want)
		}
	}

	for _, q := range []string{"limit=abc", "limit=0", "limit=501", "limit=-1", "state=done", "pool=batch", "sort=asc", "limit=1&limit=2",
		"workflow=Demo.Echo", "workflow=demo.", "workflow=demo%20echo", "workflow=" + strings.Repeat("a", 129), "workflow=demo.echo&workflow=demo.fail"} {
		r := call(t, s.URL, request{method: http.MethodGet, path: "/v1/tasks?" + q, key: s.Key})
		r.wantError(t, http.StatusBadRequest, dockettype.CodeInvalidRequest)
	}
}

func TestTraceparent(t *testing.T) {
	t.Parallel()
	s := httpapitest.New(t, httpapitest.Options{Queue: queuedOnly})
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	sent := "00-" + traceID + "-00f067aa0ba902b7-01"

	r := call(t, s.URL, request{method: http.MethodPost, path: "/v1/tasks", key: s.Key, body: echoBody,
		header: map[string]string{"Idempotency-Key": "k", "traceparent": sent}})
	r.wantStatus(t, http.StatusCreated)
	tp := r.header.Get("traceparent")
	if traceIDOf(tp) != traceID || tp == sent || !validTraceparent(tp) {
		t.Fatalf("traceparent = %q, want trace %s with a new span", tp, traceID)
	}
	task := r.task(t)
	if task.TraceID != traceID {
		t.Fatalf("task trace_id = %q, want %s", task.TraceID, traceID)
	}

	// A GET echoes the request's trace, not the task's.
	r = call(t, s.URL, request{method: http.MethodGet, path: "/v1/tasks/" + task.ID, key: s.Key})
	if got := traceIDOf(r.header.Get("traceparent")); got == traceID || !validTraceparent(r.header.Get("traceparent")) {
		t.Fatalf("GET without traceparent answered %q", r.header.Get("traceparent"))
	}

	// Without (or with an invalid) traceparent the server makes one, and a
	// submission records it.
	for name, header := range map[string]string{
		"absent":         "",
		"zero trace id":  "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
		"zero parent id": "00-" + traceID + "-0000000000000000-01",
		"upper case":     "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
		"version ff":     "ff-" + traceID + "-00f067aa0ba902b7-01",
		"short":          "00-" + traceID + "-00f067aa0ba902b7",
	} {
		h := map[string]string{"Idempotency-Key": "k-" + strings.ReplaceAll(name, " ", "-")}
		if header != "" {
			h["traceparent"] = header
		}
		r := call(t, s.URL, request{method: http.MethodPost, path: "/v1/tasks", key: s.Key, body: echoBody, header: h})
		r.wantStatus(t, http.StatusCreated)
		tp := r.header.Get("traceparent")
		if !validTraceparent(tp) || traceIDOf(tp) == traceID {
			t.Errorf("%s: traceparent = %q", name, tp)
		}
		if got := r.task(t).TraceID; got != traceIDOf(tp) {
			t.Errorf("%s: task trace_id %q, header %q", name, got, tp)
		}
	}

	// Errors carry the request's trace ID (checked by wantError) and so do
	// unauthenticated routes.
	r = call(t, s.URL, request{method: http.MethodGet, path: "/v1/tasks/nope", key: s.Key, header: map[string]string{"traceparent": sent}})
	if e := r.wantError(t, http.StatusNotFound, dockettype.CodeNotFound); e.Error.TraceID != traceID {
		t.Fatalf("error trace_id = %q", e.Error.TraceID)
	}
	r = call(t, s.URL, request{method: http.MethodGet, path: "/healthz", header: map[string]string{"traceparent": sent}})
	if traceIDOf(r.header.Get("traceparent")) != traceID {
		t.Fatalf("healthz traceparent = %q", r.header.Get("traceparent"))
	}
}

func validTraceparent(tp string) bool {
	parts := strings.Split(tp, "-")
	return len(tp) == 55 && len(parts) == 4 && parts[0] == "00" && len(parts[1]) == 32 && len(parts[2]) == 16 &&
		parts[3] == "01" && parts[1] != strings.Repeat("0", 32) && parts[2] != strings.Repeat("0", 16) &&
		strings.ToLower(tp) == tp
}

func TestHealthReadyMetrics(t *testing.T) {
	t.Parallel()
	s := httpapitest.New(t, httpapitest.Options{Queue: queuedOnly})
	r := call(t, s.URL, request{method: http.MethodGet, path: "/healthz"})
	r.wantStatus(t, http.StatusOK)
	if got := strings.TrimSpace(string(r.body)); got != `{"status":"ok"}` {
		t.Fatalf("healthz = %s", got)
	}
	call(t, s.URL, request{method: http.MethodGet, path: "/readyz"}).wantStatus(t, http.StatusOK)

	mustSubmit(t, s.URL, s.Key, "k", echoBody)
	r = call(t, s.URL, request{method: http.MethodGet, path: "/metrics"})
	r.wantStatus(t, http.StatusOK)
	for _, want := range []string{"docket_submissions_total", `docket_http_requests_total{route="POST /v1/tasks",status="201"} 1`} {
		if !strings.Contains(string(r.body), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

func TestRoutes(t *testing.T) {
	t.Parallel()
	s := httpapitest.New(t, httpapitest.Options{Queue: queuedOnly})
	for _, path := range []string{"/", "/v1", "/v1/tasks/", "/v1/tasks/x/y", "/v2/tasks", "/v1/tasks/x/cancel/now"} {
		r := call(t, s.URL, request{method: http.MethodGet, path: path, key: s.Key})
		r.wantError(t, http.StatusNotFound, dockettype.CodeNotFound)
	}
	for _, tt := range []struct{ method, path, allow string }{
		{http.MethodDelete, "/v1/tasks/x", "GET, HEAD"},
		{http.MethodPut, "/v1/tasks", "GET, HEAD, POST"},
		{http.MethodGet, "/v1/tasks/x/cancel", "POST"},
		{http.MethodPost, "/healthz", "GET, HEAD"},
		{http.MethodPost, "/metrics", "GET, HEAD"},
		{http.MethodGet, "/v1/tasks/batch", "POST"},
		{http.MethodPut, "/v1/tasks/batch", "POST"},
		{http.MethodDelete, "/v1/tasks/batch", "POST"},
	} {
		r := call(t, s.URL, request{method: tt.method, path: tt.path, key: s.Key})
		r.wantError(t, http.StatusMethodNotAllowed, dockettype.CodeMethodNotAllowed)
		if got := r.header.Get("Allow"); got != tt.allow {
			t.Errorf("%s %s: Allow = %q, want %q", tt.method, tt.path, got, tt.allow)
		}
	}
}

func TestStoreUnavailable(t *testing.T) {
	t.Parallel()
	var fs *faultstore.Store
	s := httpapitest.New(t, httpapitest.Options{Queue: queuedOnly, WrapStore: func(st store.Store) store.Store {
		fs = faultstore.New(st)
		return fs
	}})
	task := mustSubmit(t, s.URL, s.Key, "k", echoBody)

	httpapitest.FailTasks(fs, true)
	for _, rq := range []request{
		{method: http.MethodPost, path: "/v1/tasks", body: echoBody, header: map[string]string{"Idempotency-Key": "k2"}},
		{method: http.MethodPost, path: "/v1/tasks/batch", body: `{"tasks":[{"idempotency_key":"k3","workflow":"demo.echo"}]}`},
		{method: http.MethodGet, path: "/v1/tasks/" + task.ID},
		{method: http.MethodGet, path: "/v1/tasks/" + task.ID + "?wait=1s"},
		{method: http.MethodGet, path: "/v1/tasks"},
		{method: http.MethodPost, path: "/v1/tasks/" + task.ID + "/cancel"},
		{method: http.MethodGet, path: "/v1/tasks/" + task.ID + "/events"},
		{method: http.MethodGet, path: "/v1/tasks/" + task.ID + "/evidence"},
		{method: http.MethodGet, path: "/readyz"},
	} {
		rq.key = s.Key
		r := call(t, s.URL, rq)
		r.wantError(t, http.StatusServiceUnavailable, dockettype.CodeStoreUnavailable)
		assertNoLeak(t, r.body)
	}
	// Liveness does not depend on the store.
	call(t, s.URL, request{method: http.MethodGet, path: "/healthz"}).wantStatus(t, http.StatusOK)

	// The key store failing is 503 too, not 401.
	httpapitest.FailTasks(fs, false)
	httpapitest.FailKeys(fs, true)
	r := call(t, s.URL, request{method: http.MethodGet, path: "/v1/tasks/" + task.ID, key: s.Key})
	r.wantError(t, http.StatusServiceUnavailable, dockettype.CodeStoreUnavailable)
	assertNoLeak(t, r.body)
	if n := testutil.ToFloat64(s.Metrics.StoreErrors.WithLabelValues("lookup_api_key")); n != 1 {
		t.Errorf("store_errors_total{lookup_api_key} = %v, want 1 (the store operation; authenticate before)", n)
	}

	// Back to normal: nothing was admitted during the outage.
	httpapitest.FailKeys(fs, false)
	var list struct{ Tasks []*dockettype.Task }
	call(t, s.URL, request{method: http.MethodGet, path: "/v1/tasks", key: s.Key}).decode(t, &list)
	if len(list.Tasks) != 1 {
		t.Fatalf("%d tasks after the outage, want 1", len(list.Tasks))
	}
}

func TestStoreClosed(t *testing.T) {
	t.Parallel()
	s := httpapitest.New(t, httpapitest.Options{Queue: queuedOnly})
	task := mustSubmit(t, s.URL, s.Key, "k", echoBody)
	if err := s.Store.Close(); err != nil {
		t.Fatal(err)
	}
	for _, rq := range []request{
		{method: http.MethodGet, path: "/readyz"},
		{method: http.MethodGet, path: "/v1/tasks/" + task.ID, key: s.Key},
		{method: http.MethodPost, path: "/v1/tasks", key: s.Key, body: echoBody, header: map[string]string{"Idempotency-Key": "k2"}},
	} {
		r := call(t, s.URL, rq)
		r.wantError(t, http.StatusServiceUnavailable, dockettype.CodeStoreUnavailable)
		assertNoLeak(t, r.body)
	}
}

// assertNoLeak fails when an answer holds database text.
func assertNoLeak(t *testing.T, body []byte) {
	t.Helper()
	for _, bad := range []string{"SELECT", "WHERE", "sql", "database", "locked", logtest.Canary} {
		if strings.Contains(string(body), bad) {
			t.Errorf("answer leaks %q: %s", bad, body)
		}
	}
}

func TestAccessLog(t *testing.T) {
	t.Parallel()
	s := httpapitest.New(t, httpapitest.Options{})
	task := mustSubmit(t, s.URL, s.Key, "k", echoBody)
	call(t, s.URL, request{method: http.MethodGet, path: "/v1/tasks/" + task.ID + "?wait=5s", key: s.Key}).wantStatus(t, http.StatusOK)
	call(t, s.URL, request{method: http.MethodGet, path: "/v1/tasks/nope", key: s.Key}).wantStatus(t, http.StatusNotFound)
	call(t, s.URL, request{method: http.MethodGet, path: "/v1/tasks"}).wantStatus(t, http.StatusUnauthorized)

	lines := logLines(t, s.Logs.String(), "http")
	if len(lines) != 4 {
		t.Fatalf("%d access lines, want 4: %v", len(lines), lines)
	}
	want := []struct {
		route  string
		status float64
		tenant any
		code   any
	}{
		{"POST /v1/tasks", 201, "acme", nil},
		{"GET /v1/tasks/{id}", 200, "acme", nil},
		{"GET /v1/tasks/{id}", 404, "acme", "not_found"},
		{"GET /v1/tasks", 401, nil, "unauthenticated"},
	}
	for i, l := range lines {
		w := want[i]
		if l["msg"] != "http request" || l["level"] != "INFO" || l["route"] != w.route || l["status"] != w.status ||
			l["tenant"] != w.tenant || l["code"] != w.code || l["method"] == nil || l["duration_ms"] == nil {
			t.Errorf("line %d = %v, want %+v", i, l, w)
		}
		if id, _ := l["trace_id"].(string); len(id) != 32 {
			t.Errorf("line %d trace_id = %v", i, l["trace_id"])
		}
	}
	for _, line := range strings.Split(s.Logs.String(), "\n") {
		for _, bad := range []string{s.Key, "wait=", "nope", "Bearer", "Idempotency"} {
			if strings.Contains(line, bad) {
				t.Errorf("log line holds %q: %s", bad, line)
			}
		}
		if strings.Contains(line, `"component":"http"`) && strings.Contains(line, task.ID) {
			t.Errorf("access line holds the raw path: %s", line)
		}
	}
}
