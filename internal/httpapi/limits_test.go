package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/httpapi"
	"github.com/docket-dev/docket/internal/httpapi/httpapitest"
	"github.com/docket-dev/docket/internal/queue"
)

// Long polls are capped per tenant and in total; one more is 429
// too_many_requests with Retry-After, and a plain read still works.
func TestLongPollCaps(t *testing.T) {
	t.Parallel()
	entered := make(chan struct{}, 8)
	release := make(chan struct{})
	srv, _, m := fakeServerWith(t, &fakeExecutor{
		wait: func(ctx context.Context, id string, _ time.Duration) (*dockettype.Task, error) {
			entered <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return &dockettype.Task{ID: id, State: dockettype.StateSucceeded}, nil
		},
		get: func(_ context.Context, id string) (*dockettype.Task, error) {
			return &dockettype.Task{ID: id, State: dockettype.StateQueued}, nil
		},
	}, httpapi.Options{MaxWaits: 3, MaxWaitsPerTenant: 2})

	var wg sync.WaitGroup
	hold := func(key string) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := call(t, srv.URL, request{method: http.MethodGet, path: "/v1/tasks/t?wait=60s", key: key})
			if r.status != http.StatusOK {
				t.Errorf("held poll: %d %s", r.status, r.body)
			}
		}()
		<-entered
	}
	hold("dk_test")
	hold("dk_test")
	// acme has its two.
	r := call(t, srv.URL, request{method: http.MethodGet, path: "/v1/tasks/t?wait=60s", key: "dk_test"})
	r.wantError(t, http.StatusTooManyRequests, dockettype.CodeTooManyRequests)
	if r.header.Get("Retry-After") != "1" {
		t.Errorf("Retry-After = %q, want 1", r.header.Get("Retry-After"))
	}
	// Another tenant still gets one: three in all.
	hold("dk_other")
	if n := testutil.ToFloat64(m.HTTPLongPolls); n != 3 {
		t.Errorf("docket_http_long_polls = %v, want 3", n)
	}
	r = call(t, srv.URL, request{method: http.MethodGet, path: "/v1/tasks/t?wait=1s", key: "dk_other"})
	r.wantError(t, http.StatusTooManyRequests, dockettype.CodeTooManyRequests)
	// A read without ?wait= is not a long poll.
	call(t, srv.URL, request{method: http.MethodGet, path: "/v1/tasks/t", key: "dk_test"}).wantStatus(t, http.StatusOK)

	close(release)
	wg.Wait()
	if n := testutil.ToFloat64(m.HTTPLongPolls); n != 0 {
		t.Errorf("docket_http_long_polls = %v after the polls ended, want 0", n)
	}
	// The slots are free again.
	call(t, srv.URL, request{method: http.MethodGet, path: "/v1/tasks/t?wait=1s", key: "dk_test"}).wantStatus(t, http.StatusOK)
}

// A cursor that is not a task ID is 400, never a first page or a store
// error.
func TestListCursorIsValidated(t *testing.T) {
	t.Parallel()
	s := httpapitest.New(t, httpapitest.Options{Queue: queuedOnly})
	task := mustSubmit(t, s.URL, s.Key, "k", echoBody)
	for _, after := range []string{
		"bogus", "%00", "x%00y", strings.ToUpper(task.ID), task.ID + "0", task.ID[:35], "{" + task.ID + "}",
		strings.ReplaceAll(task.ID, "-", ""), "urn:uuid:" + task.ID, strings.Repeat("a", 129),
	} {
		r := call(t, s.URL, request{method: http.MethodGet, path: "/v1/tasks?after=" + after, key: s.Key})
		e := r.wantError(t, http.StatusBadRequest, dockettype.CodeInvalidRequest)
		if e.Error.Message != "after must be the next cursor of a previous page" {
			t.Errorf("after=%q: message %q", after, e.Error.Message)
		}
	}
	if n := testutil.CollectAndCount(s.Metrics.StoreErrors); n != 0 {
		t.Errorf("%d store error series after bad cursors, want none", n)
	}
	// No cursor (also spelled after=) is the first page; a well-formed
	// cursor pages on (here: nothing older than the task).
	r := call(t, s.URL, request{method: http.MethodGet, path: "/v1/tasks?after=", key: s.Key})
	if r.wantStatus(t, http.StatusOK); !strings.Contains(string(r.body), task.ID) {
		t.Fatalf("after= : %s", r.body)
	}
	r = call(t, s.URL, request{method: http.MethodGet, path: "/v1/tasks?after=" + task.ID, key: s.Key})
	if r.wantStatus(t, http.StatusOK); strings.TrimSpace(string(r.body)) != `{"tasks":[]}` {
		t.Fatalf("after the only task: %s", r.body)
	}
}

// timeout_ms is checked against its bound before anything multiplies it:
// 9223372036855 ms overflows a time.Duration into the past.
func TestTimeoutMSIsBoundedBeforeArithmetic(t *testing.T) {
	t.Parallel()
	s := httpapitest.New(t, httpapitest.Options{Queue: queuedOnly, API: httpapi.Options{MaxTimeout: 24 * time.Hour}})
	for i, ms := range []string{"9223372036855", "9223372036854775807", "86400001", "-1", "1e3", "18446744073709551616"} {
		r := submit(t, s.URL, s.Key, "big-"+ms, `{"workflow":"demo.echo","timeout_ms":`+ms+`}`)
		e := r.wantError(t, http.StatusBadRequest, dockettype.CodeInvalidRequest)
		if i < 4 && e.Error.Message != "timeout_ms must be between 1 and 86400000 (0 or absent: the default)" {
			t.Errorf("timeout_ms %s: message %q", ms, e.Error.Message)
		}
	}
	task := mustSubmit(t, s.URL, s.Key, "ok", `{"workflow":"demo.echo","timeout_ms":86400000}`)
	if got := task.DeadlineAt.Sub(task.CreatedAt); got < 24*time.Hour-time.Second || got > 24*time.Hour+time.Second {
		t.Fatalf("deadline %s after creation, want 24h", got)
	}

	// Without a configured bound the HTTP layer still refuses what a
	// duration cannot hold, so the queue's own check never overflows.
	called := false
	srv, _, _ := fakeServer(t, &fakeExecutor{submit: func(context.Context, *queue.SubmitRequest) (*queue.SubmitResult, error) {
		called = true
		return &queue.SubmitResult{Task: &dockettype.Task{ID: "t"}}, nil
	}})
	submit(t, srv.URL, "dk_test", "k", `{"workflow":"w","timeout_ms":9223372036855}`).wantError(t, http.StatusBadRequest, dockettype.CodeInvalidRequest)
	if called {
		t.Fatal("an overflowing timeout_ms reached the queue")
	}
	submit(t, srv.URL, "dk_test", "k", `{"workflow":"w","timeout_ms":9223372036854}`).wantStatus(t, http.StatusCreated)
}

// A body is refused when encoding/json would refuse it: an input nested
// 10,000 deep passed the decoder (which bounds each member alone), but the
// body, and every answer that embeds the input as a result, nests deeper
// than encoding/json reads. Found by FuzzDecodeSubmission.
func TestSubmitBodyNestingIsBounded(t *testing.T) {
	t.Parallel()
	var got []string
	srv, _, _ := fakeServer(t, &fakeExecutor{submit: func(_ context.Context, req *queue.SubmitRequest) (*queue.SubmitResult, error) {
		got = append(got, req.IdempotencyKey)
		return &queue.SubmitResult{Task: &dockettype.Task{ID: "t"}}, nil
	}})
	nested := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	submit(t, srv.URL, "dk_test", "deep", `{"workflow":"w","input":`+nested(10000)+`}`).
		wantError(t, http.StatusBadRequest, dockettype.CodeInvalidRequest)
	postBatch(t, srv.URL, "dk_test", `{"tasks":[{"idempotency_key":"deep","workflow":"w","input":`+nested(9998)+`}]}`).
		wantError(t, http.StatusBadRequest, dockettype.CodeInvalidRequest)
	submit(t, srv.URL, "dk_test", "ok", `{"workflow":"w","input":`+nested(9999)+`}`).wantStatus(t, http.StatusCreated)
	if len(got) != 1 || got[0] != "ok" {
		t.Fatalf("submissions that reached the queue: %v, want [ok]", got)
	}
}

// The access log writes known methods as sent and any other as OTHER.
func TestAccessLogMethod(t *testing.T) {
	t.Parallel()
	srv, logs, _ := fakeServer(t, &fakeExecutor{})
	long := strings.Repeat("X", 4000)
	for _, method := range []string{"PATCH", "FROBNICATE", long} {
		call(t, srv.URL, request{method: method, path: "/v1/tasks"}).wantError(t, http.StatusMethodNotAllowed, dockettype.CodeMethodNotAllowed)
	}
	lines := logLines(t, logs.String(), "http")
	if len(lines) != 3 || lines[0]["method"] != "PATCH" || lines[1]["method"] != "OTHER" || lines[2]["method"] != "OTHER" {
		t.Fatalf("access lines = %v", lines)
	}
	if strings.Contains(logs.String(), "FROBNICATE") || strings.Contains(logs.String(), long[:100]) {
		t.Fatal("the log holds a method as sent")
	}
}

func TestHealthzVersionAndDurationHistogram(t *testing.T) {
	t.Parallel()
	srv, _, _ := fakeServerWith(t, &fakeExecutor{}, httpapi.Options{Version: "v1.2.3"})
	r := call(t, srv.URL, request{method: http.MethodGet, path: "/healthz"})
	if r.wantStatus(t, http.StatusOK); strings.TrimSpace(string(r.body)) != `{"status":"ok","version":"v1.2.3"}` {
		t.Fatalf("healthz = %s", r.body)
	}
	call(t, srv.URL, request{method: http.MethodGet, path: "/v1/tasks/x"}).wantStatus(t, http.StatusUnauthorized)
	r = call(t, srv.URL, request{method: http.MethodGet, path: "/metrics"})
	for _, want := range []string{
		`docket_http_request_duration_seconds_count{class="2xx",route="GET /healthz"} 1`,
		`docket_http_request_duration_seconds_count{class="4xx",route="GET /v1/tasks/{id}"} 1`,
		`docket_http_long_polls 0`,
	} {
		if !strings.Contains(string(r.body), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if strings.Contains(string(r.body), "tenant=") {
		t.Error("a metric carries a tenant label")
	}
}
