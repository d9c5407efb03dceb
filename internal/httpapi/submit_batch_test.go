package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/httpapi"
	"github.com/docket-dev/docket/internal/httpapi/httpapitest"
	"github.com/docket-dev/docket/internal/logtest"
	"github.com/docket-dev/docket/internal/queue"
)

// batchAnswer is the body of a 200 answer to POST /v1/tasks/batch.
type batchAnswer struct {
	Results []struct {
		Status int              `json:"status"`
		Task   *dockettype.Task `json:"task"`
		Error  *struct {
			Code    dockettype.Code `json:"code"`
			Message string          `json:"message"`
			TraceID string          `json:"trace_id"`
		} `json:"error"`
	} `json:"results"`
}

func postBatch(t *testing.T, baseURL, key, body string) response {
	t.Helper()
	return call(t, baseURL, request{method: http.MethodPost, path: "/v1/tasks/batch", key: key, body: body})
}

// batchOf builds a batch body from task objects.
func batchOf(tasks ...string) string { return `{"tasks":[` + strings.Join(tasks, ",") + `]}` }

func TestSubmitBatchMixedStatuses(t *testing.T) {
	t.Parallel()
	s := httpapitest.New(t, httpapitest.Options{Queue: queuedOnly, API: httpapi.Options{MaxBodyBytes: 512}})
	if err := s.SetTenantLimit(context.Background(), "acme", 3); err != nil {
		t.Fatal(err)
	}
	earlier := mustSubmit(t, s.URL, s.Key, "earlier", echoBody) // acme holds 1

	item := func(key, rest string) string { return `{"idempotency_key":"` + key + `",` + rest + `}` }
	echo := `"workflow":"demo.echo","input":{"msg":"` + logtest.Canary + `","n":[1,2]}`
	body := batchOf(
		item("a", echo),       // 201: acme holds 2
		item("earlier", echo), // 200: the single submission's task
		item("earlier", `"workflow":"demo.echo","input":1`),                        // 409
		item("b", `"workflow":"demo.echo","author":"mallory"`),                     // 400: unknown field
		item("c", `"workflow":"demo.nope"`),                                        // 400: unknown workflow
		`{"workflow":"demo.echo"}`,                                                 // 400: no key
		`"demo.echo"`,                                                              // 400: not an object
		item("d", `"workflow":"demo.echo","priority":1.5`),                         // 400: not an integer
		item("e", `"workflow":"demo.echo","input":"`+strings.Repeat("x", 600)+`"`), // 413: over the per-task limit
		item("f", `"workflow":"demo.echo","priority":7`),                           // 201: acme holds 3
		item("g", `"workflow":"demo.echo"`),                                        // 429 tenant_quota_exceeded
	)
	r := call(t, s.URL, request{method: http.MethodPost, path: "/v1/tasks/batch", key: s.Key, body: body,
		header: map[string]string{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}})
	r.wantStatus(t, http.StatusOK)
	if got := r.header.Get("Retry-After"); got != "1" {
		t.Errorf("Retry-After = %q, want 1 (an item got 429)", got)
	}
	var ans batchAnswer
	r.decode(t, &ans)
	want := []struct {
		status int
		code   dockettype.Code
	}{
		{201, ""}, {200, ""}, {409, dockettype.CodeIdempotencyConflict},
		{400, dockettype.CodeInvalidRequest}, {400, dockettype.CodeUnknownWorkflow}, {400, dockettype.CodeInvalidRequest},
		{400, dockettype.CodeInvalidRequest}, {400, dockettype.CodeInvalidRequest}, {413, dockettype.CodePayloadTooLarge},
		{201, ""}, {429, dockettype.CodeTenantQuotaExceeded},
	}
	if len(ans.Results) != len(want) {
		t.Fatalf("%d results, want %d: %s", len(ans.Results), len(want), r.body)
	}
	for i, w := range want {
		res := ans.Results[i]
		if res.Status != w.status {
			t.Errorf("item %d: status %d, want %d (%s)", i, res.Status, w.status, r.body)
			continue
		}
		if w.code != "" {
			if res.Task != nil || res.Error == nil || res.Error.Code != w.code || res.Error.Message == "" ||
				res.Error.TraceID != "4bf92f3577b34da6a3ce929d0e0e4736" {
				t.Errorf("item %d: %+v, want error %s with the request's trace id", i, res, w.code)
			}
			continue
		}
		if res.Error != nil || res.Task == nil || res.Task.Tenant != "acme" || res.Task.Author != "alice" {
			t.Errorf("item %d: %+v, want a task of acme/alice", i, res)
		}
	}
	if id := ans.Results[1].Task.ID; id != earlier.ID {
		t.Errorf("the replay answers task %s, want %s", id, earlier.ID)
	}
	first, last := ans.Results[0].Task, ans.Results[9].Task
	if first.TraceID != "4bf92f3577b34da6a3ce929d0e0e4736" || first.Priority != 0 || last.Priority != 7 || first.ID == last.ID {
		t.Errorf("admitted tasks: %+v and %+v", first, last)
	}
	// The admitted tasks are there, with the input as sent.
	got := call(t, s.URL, request{method: http.MethodGet, path: "/v1/tasks/" + first.ID, key: s.Key})
	got.wantStatus(t, http.StatusOK)
	if strings.Contains(string(r.body), logtest.Canary) {
		t.Errorf("the batch answer echoes an input: %s", r.body)
	}
	// Sending the same batch again replays what was admitted and refuses
	// the rest the same way.
	r = postBatch(t, s.URL, s.Key, body)
	r.wantStatus(t, http.StatusOK)
	var again batchAnswer
	r.decode(t, &again)
	for i, w := range []int{200, 200, 409, 400, 400, 400, 400, 400, 413, 200, 429} {
		if again.Results[i].Status != w {
			t.Errorf("replayed batch, item %d: status %d, want %d", i, again.Results[i].Status, w)
		}
	}
	if again.Results[0].Task.ID != first.ID || again.Results[9].Task.ID != last.ID {
		t.Errorf("the replayed batch answers other tasks")
	}
	if logs := s.Logs.String(); strings.Contains(logs, logtest.Canary) {
		t.Errorf("a log line carries an input")
	}
}

func TestSubmitBatchRefusedWhole(t *testing.T) {
	t.Parallel()
	s := httpapitest.New(t, httpapitest.Options{Queue: queuedOnly, API: httpapi.Options{MaxBatchBodyBytes: 128 << 10}})
	one := `{"idempotency_key":"k","workflow":"demo.echo"}`
	items := func(n int) string {
		tasks := make([]string, n)
		for i := range tasks {
			tasks[i] = fmt.Sprintf(`{"idempotency_key":"k-%d","workflow":"demo.echo"}`, i)
		}
		return batchOf(tasks...)
	}
	tests := []struct {
		name string
		body string
	}{
		{"malformed JSON", `{"tasks":[` + one},
		{"unknown member", `{"tasks":[` + one + `],"tenant":"globex"}`},
		{"member in another case", `{"Tasks":[` + one + `]}`},
		{"duplicate member", `{"tasks":[` + one + `],"tasks":[]}`},
		{"no tasks", `{}`},
		{"null tasks", `{"tasks":null}`},
		{"tasks not an array", `{"tasks":` + one + `}`},
		{"empty array", `{"tasks":[]}`},
		{"array body", `[` + one + `]`},
		{"trailing data", batchOf(one) + ` x`},
		{"over 1,000 tasks", items(httpapi.MaxBatchItems + 1)},
		{"not UTF-8", "{\"tasks\":[{\"idempotency_key\":\"k\",\"workflow\":\"demo.echo\",\"input\":\"\xff\"}]}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			postBatch(t, s.URL, s.Key, tt.body).wantError(t, http.StatusBadRequest, dockettype.CodeInvalidRequest)
		})
	}
	// Nothing of them was admitted.
	var list struct{ Tasks []*dockettype.Task }
	call(t, s.URL, request{method: http.MethodGet, path: "/v1/tasks", key: s.Key}).decode(t, &list)
	if len(list.Tasks) != 0 {
		t.Fatalf("%d tasks admitted by refused batches", len(list.Tasks))
	}

	// Exactly 1,000 tasks are one batch.
	r := postBatch(t, s.URL, s.Key, items(httpapi.MaxBatchItems))
	r.wantStatus(t, http.StatusOK)
	var ans batchAnswer
	r.decode(t, &ans)
	if len(ans.Results) != httpapi.MaxBatchItems {
		t.Fatalf("%d results, want %d", len(ans.Results), httpapi.MaxBatchItems)
	}
	for i, res := range ans.Results {
		if res.Status != http.StatusCreated {
			t.Fatalf("item %d: status %d", i, res.Status)
		}
	}

	// The batch body limit is its own; over it is 413.
	big := batchOf(`{"idempotency_key":"big","workflow":"demo.echo","input":"` + strings.Repeat("x", 130<<10) + `"}`)
	postBatch(t, s.URL, s.Key, big).wantError(t, http.StatusRequestEntityTooLarge, dockettype.CodePayloadTooLarge)
	// Without a key: 401.
	postBatch(t, s.URL, "", batchOf(one)).wantError(t, http.StatusUnauthorized, dockettype.CodeUnauthenticated)
}

func TestSubmitBatchStaysInTheCallersTenant(t *testing.T) {
	t.Parallel()
	s := httpapitest.New(t, httpapitest.Options{Queue: queuedOnly})
	globex, err := s.NewKey(context.Background(), "globex", "bob")
	if err != nil {
		t.Fatal(err)
	}
	// globex already bound key "k"; acme's batch with the same key is
	// another binding, and a task cannot name another tenant or author.
	theirs := mustSubmit(t, s.URL, globex, "k", echoBody)
	r := postBatch(t, s.URL, s.Key, batchOf(
		`{"idempotency_key":"k","workflow":"demo.echo","input":{"msg":"`+logtest.Canary+`","n":[1,2]}}`,
		`{"idempotency_key":"k2","workflow":"demo.echo","tenant":"globex"}`,
		`{"idempotency_key":"k3","workflow":"demo.echo","author":"bob"}`,
	))
	r.wantStatus(t, http.StatusOK)
	var ans batchAnswer
	r.decode(t, &ans)
	mine := ans.Results[0].Task
	if ans.Results[0].Status != http.StatusCreated || mine.ID == theirs.ID || mine.Tenant != "acme" || mine.Author != "alice" {
		t.Fatalf("acme's item = %+v, want a new acme/alice task", ans.Results[0])
	}
	for _, i := range []int{1, 2} {
		if res := ans.Results[i]; res.Status != http.StatusBadRequest || res.Error.Code != dockettype.CodeInvalidRequest {
			t.Errorf("item %d = %+v, want 400 invalid_request", i, res)
		}
	}
	// Each tenant sees only its own task.
	call(t, s.URL, request{method: http.MethodGet, path: "/v1/tasks/" + mine.ID, key: globex}).wantError(t, http.StatusNotFound, dockettype.CodeNotFound)
	call(t, s.URL, request{method: http.MethodGet, path: "/v1/tasks/" + theirs.ID, key: s.Key}).wantError(t, http.StatusNotFound, dockettype.CodeNotFound)
	// globex replaying its own key gets its own task back.
	r = postBatch(t, s.URL, globex, batchOf(`{"idempotency_key":"k","workflow":"demo.echo","input":{"msg":"`+logtest.Canary+`","n":[1,2]}}`))
	r.decode(t, &ans)
	if ans.Results[0].Status != http.StatusOK || ans.Results[0].Task.ID != theirs.ID {
		t.Fatalf("globex replay = %+v, want 200 with task %s", ans.Results[0], theirs.ID)
	}
}

func TestSubmitBatchPassesItemsThrough(t *testing.T) {
	t.Parallel()
	got := make(chan []*queue.SubmitRequest, 1)
	srv, _, _ := fakeServer(t, &fakeExecutor{submitBatch: func(_ context.Context, p dockettype.Principal, reqs []*queue.SubmitRequest) ([]queue.BatchResult, error) {
		if p.Tenant != "acme" || p.Name != "alice" {
			t.Errorf("principal = %+v", p)
		}
		got <- reqs
		return []queue.BatchResult{
			{Task: &dockettype.Task{ID: "t1"}, Replayed: true},
			{Err: &dockettype.Error{Code: dockettype.CodeQueueFull, Message: "full", RetryAfter: 2500e6}},
		}, nil
	}})
	r := postBatch(t, srv.URL, "dk_test", batchOf(
		`{"idempotency_key":"key-1","workflow":"demo.echo","input":[1, 2],"pool":"offline","timeout_ms":5000,"priority":-3,"max_attempts":2}`,
		`{"idempotency_key":"bad key","workflow":"demo.echo"}`, // refused by the handler: not passed on
		`{"workflow":"demo.echo","idempotency_key":"key-2"}`,
	))
	r.wantStatus(t, http.StatusOK)
	if ra := r.header.Get("Retry-After"); ra != "3" {
		t.Errorf("Retry-After = %q, want 3 (2.5s rounded up)", ra)
	}
	reqs := <-got
	if len(reqs) != 2 {
		t.Fatalf("%d requests passed on, want 2", len(reqs))
	}
	first := reqs[0]
	if first.IdempotencyKey != "key-1" || first.Workflow != "demo.echo" || string(first.Input) != "[1, 2]" ||
		first.Pool != dockettype.PoolOffline || first.TimeoutMS != 5000 || first.Priority != -3 || first.MaxAttempts != 2 ||
		len(first.TraceID) != 32 || reqs[1].IdempotencyKey != "key-2" || reqs[1].TraceID != first.TraceID {
		t.Fatalf("requests = %+v, %+v", *first, *reqs[1])
	}
	var ans batchAnswer
	r.decode(t, &ans)
	if len(ans.Results) != 3 || ans.Results[0].Status != 200 || ans.Results[0].Task.ID != "t1" ||
		ans.Results[1].Status != 400 || ans.Results[2].Status != 429 || ans.Results[2].Error.Code != dockettype.CodeQueueFull {
		t.Fatalf("results = %s", r.body)
	}

	// An executor answering the wrong number of results is a server fault.
	srv, _, _ = fakeServer(t, &fakeExecutor{submitBatch: func(context.Context, dockettype.Principal, []*queue.SubmitRequest) ([]queue.BatchResult, error) {
		return nil, nil
	}})
	postBatch(t, srv.URL, "dk_test", batchOf(`{"idempotency_key":"k","workflow":"demo.echo"}`)).
		wantError(t, http.StatusInternalServerError, dockettype.CodeInternal)
	// A batch whose every task is refused by the handler never reaches the
	// executor.
	r = postBatch(t, srv.URL, "dk_test", batchOf(`{"workflow":"demo.echo"}`))
	r.wantStatus(t, http.StatusOK)
	r.decode(t, &ans)
	if len(ans.Results) != 1 || ans.Results[0].Status != 400 {
		t.Fatalf("results = %s", r.body)
	}
}
