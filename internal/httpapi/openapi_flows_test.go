package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/httpapi/httpapitest"
	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/store/faultstore"
)

// A real stack, driven through the main flows of the contract, answers
// exactly as openapi.json says: every request is checked against the
// document (the ones meant to be refused must be refused by it too), every
// answer's status, headers and body are validated, and every operation of
// the document is exercised.
func TestOpenAPIContractFlows(t *testing.T) {
	t.Parallel()
	var fs *faultstore.Store
	s := httpapitest.New(t, httpapitest.Options{Quality: true, WrapStore: func(st store.Store) store.Store {
		fs = faultstore.New(st)
		return fs
	}})
	c := loadContract(t, s.URL)
	admin := s.NewAdminKeyFor(t, "ops", "root")
	do := func(req request, want validity) response {
		t.Helper()
		return c.do(s.URL, req, want)
	}
	submitReq := func(key, idem, body string) request {
		return request{method: http.MethodPost, path: "/v1/tasks", key: key, body: body, header: map[string]string{"Idempotency-Key": idem}}
	}
	get := func(path, key string) request { return request{method: http.MethodGet, path: path, key: key} }
	post := func(path, key, body string) request {
		return request{method: http.MethodPost, path: path, key: key, body: body}
	}

	// Service routes and the dashboard, with no key.
	for _, p := range []string{"/healthz", "/readyz", "/metrics", "/openapi.json", "/ui", "/ui/app.js", "/ui/style.css"} {
		do(get(p, ""), valid).wantStatus(t, http.StatusOK)
	}
	do(get("/ui/missing.js", ""), valid).wantError(t, http.StatusNotFound, dockettype.CodeNotFound)

	// Submit, replay, conflict; a traceparent sets the trace ID.
	tp := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	req := submitReq(s.Key, "flow-1", `{"workflow":"demo.echo","input":{"hello":"world"},"priority":5}`)
	req.header["traceparent"] = tp
	created := do(req, valid)
	created.wantStatus(t, http.StatusCreated)
	task := created.task(t)
	if task.TraceID != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Errorf("trace_id = %q, want the traceparent's", task.TraceID)
	}
	do(submitReq(s.Key, "flow-1", `{"workflow":"demo.echo","input":{"hello":"world"},"priority":5}`), valid).wantStatus(t, http.StatusOK)
	do(submitReq(s.Key, "flow-1", `{"workflow":"demo.echo","input":{"hello":"moon"}}`), valid).
		wantError(t, http.StatusConflict, dockettype.CodeIdempotencyConflict)

	// 400s the document refuses too, and one it cannot know (the workflow).
	do(request{method: http.MethodPost, path: "/v1/tasks", key: s.Key, body: `{"workflow":"demo.echo"}`}, invalid).
		wantError(t, http.StatusBadRequest, dockettype.CodeInvalidRequest)
	do(submitReq(s.Key, "bad-1", `{"workflow":"demo.echo","author":"mallory"}`), invalid).
		wantError(t, http.StatusBadRequest, dockettype.CodeInvalidRequest)
	do(submitReq(s.Key, "bad-2", `{"workflow":"demo.echo","priority":5000}`), invalid).
		wantError(t, http.StatusBadRequest, dockettype.CodeInvalidRequest)
	do(submitReq(s.Key, "bad-3", `{"workflow":`), invalid).wantError(t, http.StatusBadRequest, dockettype.CodeInvalidRequest)
	do(submitReq(s.Key, "bad-4", `{"workflow":"no.such"}`), valid).wantError(t, http.StatusBadRequest, dockettype.CodeUnknownWorkflow)
	do(submitReq(s.Key, "bad-5", `{"workflow":"demo.echo","run_at":"soon"}`), invalid).
		wantError(t, http.StatusBadRequest, dockettype.CodeInvalidRequest)

	// A scheduled task.
	later := time.Now().UTC().Add(time.Hour).Format(time.RFC3339)
	do(submitReq(s.Key, "flow-later", `{"workflow":"demo.echo","input":3,"run_at":"`+later+`"}`), valid).wantStatus(t, http.StatusCreated)

	// 401: no key (the document requires one), an unknown key.
	do(submitReq("", "anon", `{"workflow":"demo.echo"}`), invalid).wantError(t, http.StatusUnauthorized, dockettype.CodeUnauthenticated)
	do(get("/v1/tasks", "dk_unknown"), valid).wantError(t, http.StatusUnauthorized, dockettype.CodeUnauthenticated)

	// 413: a body over 1 MiB.
	big := `{"workflow":"demo.echo","input":"` + strings.Repeat("x", 1<<20) + `"}`
	do(submitReq(s.Key, "big", big), valid).wantError(t, http.StatusRequestEntityTooLarge, dockettype.CodePayloadTooLarge)

	// Read, long-poll, list and page.
	do(get("/v1/tasks/"+task.ID, s.Key), valid).wantStatus(t, http.StatusOK)
	done := do(get("/v1/tasks/"+task.ID+"?wait=10s", s.Key), valid)
	done.wantStatus(t, http.StatusOK)
	if st := done.task(t).State; st != dockettype.StateSucceeded {
		t.Fatalf("echo task state = %s after the long poll", st)
	}
	do(get("/v1/tasks/"+task.ID+"?wait=soon", s.Key), invalid).wantError(t, http.StatusBadRequest, dockettype.CodeInvalidRequest)
	do(get("/v1/tasks/0190f0c4-0000-7000-8000-000000000000", s.Key), valid).wantError(t, http.StatusNotFound, dockettype.CodeNotFound)
	mustSubmit(t, s.URL, s.Key, "flow-2", `{"workflow":"demo.echo","input":2}`)
	page := do(get("/v1/tasks?limit=1&pool=online", s.Key), valid)
	page.wantStatus(t, http.StatusOK)
	var list struct {
		Tasks []dockettype.Task `json:"tasks"`
		Next  string            `json:"next"`
	}
	page.decode(t, &list)
	if len(list.Tasks) != 1 || list.Next == "" {
		t.Fatalf("first page = %s", page.body)
	}
	do(get("/v1/tasks?limit=1&after="+list.Next, s.Key), valid).wantStatus(t, http.StatusOK)
	do(get("/v1/tasks?state=succeeded&after=", s.Key), valid).wantStatus(t, http.StatusOK)
	do(get("/v1/tasks?after=page-2", s.Key), invalid).wantError(t, http.StatusBadRequest, dockettype.CodeInvalidRequest)
	do(get("/v1/tasks?limit=0", s.Key), invalid).wantError(t, http.StatusBadRequest, dockettype.CodeInvalidRequest)
	do(get("/v1/tasks?workflow=demo.echo&state=succeeded&limit=1", s.Key), valid).wantStatus(t, http.StatusOK)
	do(get("/v1/tasks?workflow=Demo.Echo", s.Key), invalid).wantError(t, http.StatusBadRequest, dockettype.CodeInvalidRequest)

	// Batch: new, replay, conflict in one call; an invalid task alone; a
	// malformed batch whole.
	batch := do(post("/v1/tasks/batch", s.Key, `{"tasks":[
		{"idempotency_key":"b-1","workflow":"demo.echo","input":1},
		{"idempotency_key":"flow-1","workflow":"demo.echo","input":{"hello":"world"},"priority":5},
		{"idempotency_key":"flow-1","workflow":"demo.echo","input":"other"}]}`), valid)
	batch.wantStatus(t, http.StatusOK)
	wantBatchStatuses(t, batch, 201, 200, 409)
	wantBatchStatuses(t, do(post("/v1/tasks/batch", s.Key, `{"tasks":[
		{"idempotency_key":"b-2","workflow":"demo.echo"},
		{"idempotency_key":"b-3","workflow":"demo.echo","pool":"nowhere"}]}`), invalid), 201, 400)
	do(post("/v1/tasks/batch", s.Key, `{"tasks":[]}`), invalid).wantError(t, http.StatusBadRequest, dockettype.CodeInvalidRequest)
	do(post("/v1/tasks/batch", "", `{"tasks":[{"idempotency_key":"x","workflow":"demo.echo"}]}`), invalid).
		wantError(t, http.StatusUnauthorized, dockettype.CodeUnauthenticated)

	// Events and evidence of a quality evaluation.
	q := mustSubmit(t, s.URL, s.Key, "q-1", `{"workflow":"quality.evaluate","input":{"text":"Thanks for your order."}}`)
	do(get("/v1/tasks/"+q.ID+"?wait=10s", s.Key), valid).wantStatus(t, http.StatusOK)
	ev := do(get("/v1/tasks/"+q.ID+"/evidence", s.Key), valid)
	ev.wantStatus(t, http.StatusOK)
	var evidence struct {
		Evidence []json.RawMessage `json:"evidence"`
	}
	ev.decode(t, &evidence)
	if len(evidence.Evidence) == 0 {
		t.Fatalf("quality.evaluate wrote no evidence: %s", ev.body)
	}
	do(get("/v1/tasks/"+q.ID+"/events", s.Key), valid).wantStatus(t, http.StatusOK)
	do(get("/v1/tasks/nope/events", s.Key), valid).wantError(t, http.StatusNotFound, dockettype.CodeNotFound)
	do(get("/v1/tasks/nope/evidence", s.Key), valid).wantError(t, http.StatusNotFound, dockettype.CodeNotFound)

	// Cancel a long task, then again (unchanged), and a missing one.
	nap := mustSubmit(t, s.URL, s.Key, "nap", `{"workflow":"demo.sleep","input":{"ms":600000}}`)
	cancelled := do(post("/v1/tasks/"+nap.ID+"/cancel", s.Key, ""), valid)
	cancelled.wantStatus(t, http.StatusOK)
	if st := cancelled.task(t).State; st != dockettype.StateCancelled {
		t.Fatalf("cancelled task state = %s", st)
	}
	do(post("/v1/tasks/"+nap.ID+"/cancel", s.Key, ""), valid).wantStatus(t, http.StatusOK)
	do(post("/v1/tasks/nope/cancel", s.Key, ""), valid).wantError(t, http.StatusNotFound, dockettype.CodeNotFound)

	// Admin: tenants, keys, stats, rules; a member is refused.
	do(request{method: http.MethodPatch, path: "/v1/admin/tenants/tight", key: admin, body: `{"max_in_flight":1}`}, valid).wantStatus(t, http.StatusOK)
	do(request{method: http.MethodPatch, path: "/v1/admin/tenants/tight", key: admin, body: `{"weight":0}`}, invalid).
		wantError(t, http.StatusBadRequest, dockettype.CodeInvalidRequest)
	do(get("/v1/admin/tenants", admin), valid).wantStatus(t, http.StatusOK)
	do(get("/v1/admin/tenants", s.Key), valid).wantError(t, http.StatusForbidden, dockettype.CodeForbidden)
	created = do(post("/v1/admin/keys", admin, `{"tenant":"tight","principal":"tom"}`), valid)
	created.wantStatus(t, http.StatusCreated)
	var newKey struct{ ID, Key string }
	created.decode(t, &newKey)
	do(post("/v1/admin/keys", admin, `{"tenant":"tight","principal":"tom","role":"root"}`), invalid).
		wantError(t, http.StatusBadRequest, dockettype.CodeInvalidRequest)
	do(get("/v1/admin/keys", admin), valid).wantStatus(t, http.StatusOK)
	do(get("/v1/admin/keys?tenant=tight", admin), valid).wantStatus(t, http.StatusOK)
	do(get("/v1/admin/stats", admin), valid).wantStatus(t, http.StatusOK)
	do(get("/v1/admin/rules", admin), valid).wantStatus(t, http.StatusOK)
	do(get("/v1/admin/stats", s.Key), valid).wantError(t, http.StatusForbidden, dockettype.CodeForbidden)
	do(get("/v1/admin/stats/throughput", admin), valid).wantStatus(t, http.StatusOK)
	do(get("/v1/admin/stats/throughput?minutes=60&bucket_seconds=60", admin), valid).wantStatus(t, http.StatusOK)
	do(get("/v1/admin/stats/throughput?minutes=61", admin), invalid).wantError(t, http.StatusBadRequest, dockettype.CodeInvalidRequest)
	// A bucket the document allows that does not divide the window.
	do(get("/v1/admin/stats/throughput?minutes=10&bucket_seconds=7", admin), valid).wantError(t, http.StatusBadRequest, dockettype.CodeInvalidRequest)
	do(get("/v1/admin/stats/throughput", s.Key), valid).wantError(t, http.StatusForbidden, dockettype.CodeForbidden)

	// 429: the tenant's limit of 1, single and in a batch (Retry-After).
	first := do(submitReq(newKey.Key, "t-1", `{"workflow":"demo.sleep","input":{"ms":600000}}`), valid)
	first.wantStatus(t, http.StatusCreated)
	do(submitReq(newKey.Key, "t-2", `{"workflow":"demo.echo"}`), valid).wantError(t, http.StatusTooManyRequests, dockettype.CodeTenantQuotaExceeded)
	full := do(post("/v1/tasks/batch", newKey.Key, `{"tasks":[{"idempotency_key":"t-3","workflow":"demo.echo"}]}`), valid)
	wantBatchStatuses(t, full, 429)
	if full.header.Get("Retry-After") == "" {
		t.Errorf("a batch with a 429 task has no Retry-After")
	}
	do(post("/v1/tasks/"+first.task(t).ID+"/cancel", newKey.Key, ""), valid).wantStatus(t, http.StatusOK)

	// Revoke: the key is refused from then on.
	do(post("/v1/admin/keys/"+newKey.ID+"/revoke", admin, ""), valid).wantStatus(t, http.StatusOK)
	do(post("/v1/admin/keys/key_missing/revoke", admin, ""), valid).wantError(t, http.StatusNotFound, dockettype.CodeNotFound)
	do(get("/v1/tasks", newKey.Key), valid).wantError(t, http.StatusUnauthorized, dockettype.CodeUnauthenticated)

	// Remote workflows and the worker API: register, claim (a long poll
	// that finds the task at once), heartbeat, evidence, finish (and again:
	// idempotent), release of a finished lease, the workers list; the roles
	// are kept apart.
	put := func(path, key, body string) request {
		return request{method: http.MethodPut, path: path, key: key, body: body}
	}
	do(put("/v1/admin/workflows/images.resize", admin, `{"pool":"online","max_attempts":2,"timeout_ms":60000}`), valid).wantStatus(t, http.StatusOK)
	do(put("/v1/admin/workflows/demo.echo", admin, `{"pool":"online"}`), valid).wantError(t, http.StatusConflict, dockettype.CodeBuiltinWorkflow)
	do(put("/v1/admin/workflows/images.crop", admin, `{"pool":"nowhere"}`), invalid).wantError(t, http.StatusBadRequest, dockettype.CodeInvalidRequest)
	do(put("/v1/admin/workflows/images.crop", s.Key, `{"pool":"online"}`), valid).wantError(t, http.StatusForbidden, dockettype.CodeForbidden)
	do(get("/v1/admin/workflows", admin), valid).wantStatus(t, http.StatusOK)
	created = do(post("/v1/admin/keys", admin, `{"tenant":"`+httpapitest.Tenant+`","principal":"fleet","role":"worker"}`), valid)
	created.wantStatus(t, http.StatusCreated)
	var workerKey struct{ Key string }
	created.decode(t, &workerKey)
	// The remote task depends on a task that has succeeded (read back by
	// the worker below); a dependency the tenant does not have is refused.
	upstream := mustSubmit(t, s.URL, s.Key, "upstream-1", `{"workflow":"demo.echo","input":{"w":320}}`)
	if got := do(get("/v1/tasks/"+upstream.ID+"?wait=10s", s.Key), valid).task(t); got.State != dockettype.StateSucceeded {
		t.Fatalf("upstream task is %s, want succeeded", got.State)
	}
	do(submitReq(s.Key, "remote-0", `{"workflow":"images.resize","depends_on":["01900000-0000-7000-8000-000000000000"]}`), valid).
		wantError(t, http.StatusBadRequest, dockettype.CodeInvalidDependency)
	remoteTask := mustSubmit(t, s.URL, s.Key, "remote-1", `{"workflow":"images.resize","input":{"w":640},"depends_on":["`+upstream.ID+`"]}`)
	claimed := do(post("/v1/worker/claim", workerKey.Key, `{"workflows":["images.resize"],"max":2,"wait_ms":5000,"worker_id":"flow-1","slots":2,"sdk":"test/1"}`), valid)
	claimed.wantStatus(t, http.StatusOK)
	var claim struct {
		Tasks []struct {
			Lease string          `json:"lease"`
			Task  dockettype.Task `json:"task"`
			Input json.RawMessage `json:"input"`
		} `json:"tasks"`
	}
	claimed.decode(t, &claim)
	if len(claim.Tasks) != 1 || claim.Tasks[0].Task.ID != remoteTask.ID || string(claim.Tasks[0].Input) != `{"w":640}` {
		t.Fatalf("claim = %s, want the remote task with its input", claimed.body)
	}
	lease := claim.Tasks[0].Lease
	do(post("/v1/worker/claim", s.Key, `{"workflows":["images.resize"]}`), valid).wantError(t, http.StatusForbidden, dockettype.CodeForbidden)
	do(get("/v1/tasks", workerKey.Key), valid).wantError(t, http.StatusForbidden, dockettype.CodeForbidden)
	do(post("/v1/worker/claim", workerKey.Key, `{"workflows":["images.resize"],"max":5000}`), invalid).
		wantError(t, http.StatusBadRequest, dockettype.CodeInvalidRequest)
	do(post("/v1/worker/claim", workerKey.Key, `{"workflows":["demo.echo"]}`), valid).wantError(t, http.StatusBadRequest, dockettype.CodeUnknownWorkflow)
	do(post("/v1/worker/claim", workerKey.Key, `{"workflows":["images.resize"],"Max":1}`), invalid).
		wantError(t, http.StatusBadRequest, dockettype.CodeInvalidRequest)
	beat := do(post("/v1/worker/heartbeat", workerKey.Key, `{"leases":["`+lease+`","dkl1.forged"],"worker_id":"flow-1"}`), valid)
	beat.wantStatus(t, http.StatusOK)
	if !strings.Contains(string(beat.body), `"status":"ok"`) || !strings.Contains(string(beat.body), `"status":"lease_lost"`) {
		t.Errorf("heartbeat = %s, want ok for the lease and lease_lost for the forged one", beat.body)
	}
	deps := do(post("/v1/worker/dependencies", workerKey.Key, `{"lease":"`+lease+`"}`), valid)
	deps.wantStatus(t, http.StatusOK)
	if want := `{"status":"ok","dependencies":[{"id":"` + upstream.ID + `","state":"succeeded","result":{"w":320},"error":null}]}`; strings.TrimSpace(string(deps.body)) != want {
		t.Errorf("dependencies = %s, want %s", deps.body, want)
	}
	do(post("/v1/worker/dependencies", workerKey.Key, `{"lease":"dkl1.forged"}`), valid).wantStatus(t, http.StatusOK)
	do(post("/v1/worker/evidence", workerKey.Key, `{"items":[{"lease":"`+lease+`","kind":"size","body":{"w":640}}]}`), valid).wantStatus(t, http.StatusOK)
	do(post("/v1/worker/finish", workerKey.Key, `{"items":[{"lease":"`+lease+`","outcome":"failed"}]}`), valid).
		wantError(t, http.StatusBadRequest, dockettype.CodeInvalidRequest)
	for range 2 { // the second is a retry of a committed finish: ok again
		fin := do(post("/v1/worker/finish", workerKey.Key, `{"items":[{"lease":"`+lease+`","outcome":"succeeded","result":{"url":"x"}}]}`), valid)
		fin.wantStatus(t, http.StatusOK)
		if !strings.Contains(string(fin.body), `"status":"ok"`) {
			t.Errorf("finish = %s, want ok", fin.body)
		}
	}
	rel := do(post("/v1/worker/release", workerKey.Key, `{"leases":["`+lease+`"]}`), valid)
	rel.wantStatus(t, http.StatusOK)
	if !strings.Contains(string(rel.body), `"status":"lease_lost"`) {
		t.Errorf("release of a finished lease = %s, want lease_lost", rel.body)
	}
	if got := do(get("/v1/tasks/"+remoteTask.ID, s.Key), valid).task(t); got.State != dockettype.StateSucceeded || string(got.Result) != `{"url":"x"}` {
		t.Errorf("the remote task is %s %s, want succeeded with the worker's result", got.State, got.Result)
	}
	do(get("/v1/admin/workers", admin), valid).wantStatus(t, http.StatusOK)
	do(request{method: http.MethodDelete, path: "/v1/admin/workflows/images.resize", key: admin}, valid).wantStatus(t, http.StatusOK)
	do(request{method: http.MethodDelete, path: "/v1/admin/workflows/images.resize", key: admin}, valid).wantError(t, http.StatusNotFound, dockettype.CodeNotFound)
	do(request{method: http.MethodDelete, path: "/v1/admin/workflows/demo.echo", key: admin}, valid).wantError(t, http.StatusConflict, dockettype.CodeBuiltinWorkflow)
	do(submitReq(s.Key, "remote-2", `{"workflow":"images.resize"}`), valid).wantError(t, http.StatusBadRequest, dockettype.CodeUnknownWorkflow)

	// Schedules: create, replace, read, list, pause, resume, delete; a
	// bad cron or time zone, an unknown workflow, an unknown member and a
	// member key are refused.
	sched := `{"tenant":"` + httpapitest.Tenant + `","workflow":"demo.echo","input":{"n":1},"cron":"0 9 * * MON-FRI","time_zone":"America/New_York","overlap":"skip","missed":"catch_up","catch_up_limit":3}`
	made := do(put("/v1/admin/schedules/daily.report", admin, sched), valid)
	made.wantStatus(t, http.StatusCreated)
	var schedule struct {
		NextFireTimes []time.Time `json:"next_fire_times"`
		CatchUpLimit  int         `json:"catch_up_limit"`
	}
	made.decode(t, &schedule)
	if len(schedule.NextFireTimes) != 5 || schedule.CatchUpLimit != 3 {
		t.Errorf("created schedule = %s, want 5 next fire times and catch_up_limit 3", made.body)
	}
	do(put("/v1/admin/schedules/daily.report", admin, strings.Replace(sched, `"n":1`, `"n":2`, 1)), valid).wantStatus(t, http.StatusOK)
	do(put("/v1/admin/schedules/bad.cron", admin, strings.Replace(sched, "0 9 * * MON-FRI", "at nine", 1)), valid).
		wantError(t, http.StatusBadRequest, dockettype.CodeInvalidRequest)
	do(put("/v1/admin/schedules/bad.zone", admin, strings.Replace(sched, "America/New_York", "Mars/Olympus", 1)), valid).
		wantError(t, http.StatusBadRequest, dockettype.CodeInvalidRequest)
	do(put("/v1/admin/schedules/bad.flow", admin, strings.Replace(sched, "demo.echo", "no.such", 1)), valid).
		wantError(t, http.StatusBadRequest, dockettype.CodeUnknownWorkflow)
	do(put("/v1/admin/schedules/bad.member", admin, strings.Replace(sched, `"missed"`, `"author":"mallory","missed"`, 1)), invalid).
		wantError(t, http.StatusBadRequest, dockettype.CodeInvalidRequest)
	do(put("/v1/admin/schedules/Bad%20Name", admin, sched), invalid).wantError(t, http.StatusBadRequest, dockettype.CodeInvalidRequest)
	do(put("/v1/admin/schedules/daily.report", s.Key, sched), valid).wantError(t, http.StatusForbidden, dockettype.CodeForbidden)
	do(get("/v1/admin/schedules", admin), valid).wantStatus(t, http.StatusOK)
	one := do(get("/v1/admin/schedules/daily.report", admin), valid)
	one.wantStatus(t, http.StatusOK)
	if !strings.Contains(string(one.body), `"runs":[]`) || !strings.Contains(string(one.body), `"input":{"n":2}`) {
		t.Errorf("schedule = %s, want its (empty) runs and the replaced input", one.body)
	}
	do(get("/v1/admin/schedules/missing", admin), valid).wantError(t, http.StatusNotFound, dockettype.CodeNotFound)
	paused := do(post("/v1/admin/schedules/daily.report/pause", admin, ""), valid)
	paused.wantStatus(t, http.StatusOK)
	if !strings.Contains(string(paused.body), `"paused":true`) || !strings.Contains(string(paused.body), `"next_fire_times":[]`) {
		t.Errorf("paused schedule = %s", paused.body)
	}
	do(post("/v1/admin/schedules/daily.report/resume", admin, ""), valid).wantStatus(t, http.StatusOK)
	do(post("/v1/admin/schedules/missing/resume", admin, ""), valid).wantError(t, http.StatusNotFound, dockettype.CodeNotFound)
	do(request{method: http.MethodDelete, path: "/v1/admin/schedules/daily.report", key: admin}, valid).wantStatus(t, http.StatusOK)
	do(request{method: http.MethodDelete, path: "/v1/admin/schedules/daily.report", key: admin}, valid).wantError(t, http.StatusNotFound, dockettype.CodeNotFound)

	// Failures: a retry, the dead letters, bulk actions (started, followed,
	// stopped; their completion is covered by the queue's and the CLI's
	// tests).
	failing := mustSubmit(t, s.URL, s.Key, "flow-fail", `{"workflow":"demo.fail","input":{"code":"upstream_down"},"max_attempts":1}`).ID
	other, err := s.NewKey(t.Context(), "globex", "bob")
	if err != nil {
		t.Fatal(err)
	}
	if st := do(get("/v1/tasks/"+failing+"?wait=10s", s.Key), valid).task(t).State; st != dockettype.StateFailed {
		t.Fatalf("demo.fail task state = %s after the long poll", st)
	}
	do(get("/v1/tasks/"+failing+"/input", s.Key), valid).wantStatus(t, http.StatusOK)
	do(get("/v1/tasks/"+failing+"/input", other), valid).wantError(t, http.StatusNotFound, dockettype.CodeNotFound)
	do(get("/v1/tasks/dead-letters", s.Key), valid).wantStatus(t, http.StatusOK)
	do(get("/v1/tasks/dead-letters?tenant=other", s.Key), valid).wantError(t, http.StatusBadRequest, dockettype.CodeInvalidRequest)
	do(get("/v1/admin/dead-letters?tenant="+httpapitest.Tenant, admin), valid).wantStatus(t, http.StatusOK)
	retried := do(post("/v1/tasks/"+failing+"/retry", s.Key, ""), valid)
	retried.wantStatus(t, http.StatusOK)
	if st := retried.task(t).State; st.Terminal() {
		t.Errorf("retried task state = %s, want live", st)
	}
	do(post("/v1/tasks/"+task.ID+"/retry", s.Key, ""), valid).wantError(t, http.StatusConflict, dockettype.CodeNotRetryable)
	do(post("/v1/tasks/0190f0c4-0000-7000-8000-000000000000/retry", s.Key, ""), valid).wantError(t, http.StatusNotFound, dockettype.CodeNotFound)
	job := do(post("/v1/tasks/bulk", s.Key, `{"action":"retry","filter":{"workflow":"demo.fail","state":"failed"}}`), valid)
	job.wantStatus(t, http.StatusAccepted)
	var jobBody struct{ ID string }
	job.decode(t, &jobBody)
	do(get("/v1/bulk/"+jobBody.ID, s.Key), valid).wantStatus(t, http.StatusOK)
	do(get("/v1/bulk/"+jobBody.ID, other), valid).wantError(t, http.StatusNotFound, dockettype.CodeNotFound)
	do(post("/v1/bulk/"+jobBody.ID+"/cancel", s.Key, ""), valid).wantStatus(t, http.StatusOK)
	do(post("/v1/tasks/bulk", s.Key, `{"action":"explode"}`), invalid).wantError(t, http.StatusBadRequest, dockettype.CodeInvalidRequest)
	do(post("/v1/tasks/bulk", s.Key, `{"action":"retry","filter":{"tenant":"globex"}}`), valid).wantError(t, http.StatusForbidden, dockettype.CodeForbidden)
	adminJob := do(post("/v1/admin/bulk", admin, `{"action":"delete","filter":{"tenant":"`+httpapitest.Tenant+`","state":"failed","created_after":"2020-01-01T00:00:00Z"}}`), valid)
	adminJob.wantStatus(t, http.StatusAccepted)
	adminJob.decode(t, &jobBody)
	do(get("/v1/admin/bulk/"+jobBody.ID, admin), valid).wantStatus(t, http.StatusOK)
	do(post("/v1/admin/bulk/"+jobBody.ID+"/cancel", admin, ""), valid).wantStatus(t, http.StatusOK)
	do(post("/v1/admin/bulk", s.Key, `{"action":"delete"}`), valid).wantError(t, http.StatusForbidden, dockettype.CodeForbidden)
	// Flow control: pause and resume (exactly one target), a workflow's
	// rate limit and concurrency per key, a tenant's rate limit; a bad
	// concurrency key is refused.
	pausedAnswer := do(post("/v1/admin/pause", admin, `{"tenant":"nobody"}`), valid)
	pausedAnswer.wantStatus(t, http.StatusOK)
	if strings.TrimSpace(string(pausedAnswer.body)) != `{"paused":[{"tenant":"nobody"}]}` {
		t.Errorf("pause = %s", pausedAnswer.body)
	}
	do(post("/v1/admin/pause", admin, `{"tenant":"nobody","pool":"online"}`), invalid).wantError(t, http.StatusBadRequest, dockettype.CodeInvalidRequest)
	do(post("/v1/admin/pause", admin, `{"workflow":"no.such"}`), valid).wantError(t, http.StatusBadRequest, dockettype.CodeUnknownWorkflow)
	if r := do(post("/v1/admin/resume", admin, `{"tenant":"nobody"}`), valid); strings.TrimSpace(string(r.body)) != `{"paused":[]}` {
		t.Errorf("resume = %s", r.body)
	}
	// A pause that refuses submissions: 409 submissions_paused, alone in
	// a batch; a resume admits the same request again.
	refusing := do(post("/v1/admin/pause", admin, `{"workflow":"demo.fail","refuse_submissions":true}`), valid)
	if strings.TrimSpace(string(refusing.body)) != `{"paused":[{"refuse_submissions":true,"workflow":"demo.fail"}]}` {
		t.Errorf("refusing pause = %s", refusing.body)
	}
	do(post("/v1/admin/pause", admin, `{"workflow":"demo.fail","refuse_submissions":"yes"}`), invalid).
		wantError(t, http.StatusBadRequest, dockettype.CodeInvalidRequest)
	do(post("/v1/admin/resume", admin, `{"workflow":"demo.fail","refuse_submissions":false}`), invalid).
		wantError(t, http.StatusBadRequest, dockettype.CodeInvalidRequest)
	do(submitReq(s.Key, "refused-1", `{"workflow":"demo.fail"}`), valid).wantError(t, http.StatusConflict, dockettype.CodeSubmissionsPaused)
	wantBatchStatuses(t, do(post("/v1/tasks/batch", s.Key, `{"tasks":[
		{"idempotency_key":"refused-2","workflow":"demo.echo"},
		{"idempotency_key":"refused-1","workflow":"demo.fail"}]}`), valid), 201, 409)
	if list := do(get("/v1/admin/workflows", admin), valid); !strings.Contains(string(list.body), `"name":"demo.fail","pool":"online","timeout_ms":0,"max_attempts":0,"remote":false,"paused":true,"refuse_submissions":true`) {
		t.Errorf("workflow list with a refusing pause = %s", list.body)
	}
	do(post("/v1/admin/resume", admin, `{"workflow":"demo.fail"}`), valid).wantStatus(t, http.StatusOK)
	do(submitReq(s.Key, "refused-1", `{"workflow":"demo.fail"}`), valid).wantStatus(t, http.StatusCreated)
	limited := do(request{method: http.MethodPatch, path: "/v1/admin/workflows/demo.sleep", key: admin,
		body: `{"rate_per_second":500,"burst":50,"concurrency_per_key":2}`}, valid)
	limited.wantStatus(t, http.StatusOK)
	if strings.TrimSpace(string(limited.body)) != `{"name":"demo.sleep","paused":false,"refuse_submissions":false,"rate_per_second":500,"burst":50,"concurrency_per_key":2}` {
		t.Errorf("workflow limits = %s", limited.body)
	}
	// The workflow list shows the limits too.
	if list := do(get("/v1/admin/workflows", admin), valid); !strings.Contains(string(list.body),
		`{"name":"demo.sleep","pool":"online","timeout_ms":0,"max_attempts":0,"remote":false,"paused":false,"refuse_submissions":false,"rate_per_second":500,"burst":50,"concurrency_per_key":2}`) {
		t.Errorf("workflow list after the PATCH = %s", list.body)
	}
	cleared := do(request{method: http.MethodPatch, path: "/v1/admin/workflows/demo.sleep", key: admin,
		body: `{"rate_per_second":null,"concurrency_per_key":null}`}, valid)
	if strings.TrimSpace(string(cleared.body)) != `{"name":"demo.sleep","paused":false,"refuse_submissions":false,"rate_per_second":null,"burst":null,"concurrency_per_key":1}` {
		t.Errorf("cleared workflow limits = %s", cleared.body)
	}
	do(request{method: http.MethodPatch, path: "/v1/admin/workflows/demo.sleep", key: admin, body: `{"rate_per_second":0}`}, invalid).
		wantError(t, http.StatusBadRequest, dockettype.CodeInvalidRequest)
	do(request{method: http.MethodPatch, path: "/v1/admin/workflows/no.such", key: admin, body: `{"burst":1}`}, valid).
		wantError(t, http.StatusBadRequest, dockettype.CodeUnknownWorkflow)
	tenantRate := do(request{method: http.MethodPatch, path: "/v1/admin/tenants/ratey", key: admin, body: `{"rate_per_second":10,"burst":0}`}, valid)
	if !strings.Contains(string(tenantRate.body), `"rate_per_second":10,"burst":0`) {
		t.Errorf("tenant rate limit = %s", tenantRate.body)
	}
	do(submitReq(s.Key, "bad-key", `{"workflow":"demo.echo","concurrency_key":"has space"}`), invalid).
		wantError(t, http.StatusBadRequest, dockettype.CodeInvalidRequest)
	keyed := do(submitReq(s.Key, "keyed", `{"workflow":"demo.echo","concurrency_key":"customer-1"}`), valid)
	keyed.wantStatus(t, http.StatusCreated)
	if !strings.Contains(string(keyed.body), `"concurrency_key":"customer-1"`) {
		t.Errorf("keyed task = %s", keyed.body)
	}

	// 503: the store is down for the API's task calls.
	httpapitest.FailTasks(fs, true)
	do(get("/readyz", ""), valid).wantError(t, http.StatusServiceUnavailable, dockettype.CodeStoreUnavailable)
	do(get("/v1/tasks", s.Key), valid).wantError(t, http.StatusServiceUnavailable, dockettype.CodeStoreUnavailable)
	do(submitReq(s.Key, "down", `{"workflow":"demo.echo"}`), valid).wantError(t, http.StatusServiceUnavailable, dockettype.CodeStoreUnavailable)
	httpapitest.FailTasks(fs, false)

	if missed := c.unexercised(); len(missed) > 0 {
		t.Errorf("operations of openapi.json no request exercised: %v", missed)
	}
}

// wantBatchStatuses checks a batch answer's per-task statuses.
func wantBatchStatuses(t *testing.T, r response, want ...int) {
	t.Helper()
	r.wantStatus(t, http.StatusOK)
	var got struct {
		Results []struct {
			Status int `json:"status"`
		} `json:"results"`
	}
	r.decode(t, &got)
	if len(got.Results) != len(want) {
		t.Fatalf("batch results = %s, want statuses %v", r.body, want)
	}
	for i, res := range got.Results {
		if res.Status != want[i] {
			t.Errorf("batch result %d status = %d, want %d (%s)", i, res.Status, want[i], r.body)
		}
	}
}
