package httpapi_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/httpapi"
	"github.com/docket-dev/docket/internal/logtest"
	"github.com/docket-dev/docket/internal/metrics"
	"github.com/docket-dev/docket/internal/queue"
)

// fakeExecutor answers Get, Wait, Submit and SubmitBatch with test functions; the
// embedded nil Executor panics on anything else.
type fakeExecutor struct {
	httpapi.Executor
	get    func(ctx context.Context, id string) (*dockettype.Task, error)
	wait   func(ctx context.Context, id string, d time.Duration) (*dockettype.Task, error)
	submit func(ctx context.Context, req *queue.SubmitRequest) (*queue.SubmitResult, error)

	submitBatch func(ctx context.Context, p dockettype.Principal, reqs []*queue.SubmitRequest) ([]queue.BatchResult, error)
}

func (f *fakeExecutor) Get(ctx context.Context, _ dockettype.Principal, id string) (*dockettype.Task, error) {
	return f.get(ctx, id)
}

func (f *fakeExecutor) Wait(ctx context.Context, _ dockettype.Principal, id string, d time.Duration) (*dockettype.Task, error) {
	return f.wait(ctx, id, d)
}

func (f *fakeExecutor) Submit(ctx context.Context, _ dockettype.Principal, req *queue.SubmitRequest) (*queue.SubmitResult, error) {
	return f.submit(ctx, req)
}

func (f *fakeExecutor) SubmitBatch(ctx context.Context, p dockettype.Principal, reqs []*queue.SubmitRequest) ([]queue.BatchResult, error) {
	return f.submitBatch(ctx, p, reqs)
}

// fakeAuth accepts the keys "dk_test" (acme/alice), "dk_other"
// (globex/bob), both members, and "dk_admin" (acme/root, admin).
type fakeAuth struct{}

func (fakeAuth) Authenticate(_ context.Context, key string) (dockettype.Principal, error) {
	switch key {
	case "dk_test":
		return dockettype.Principal{Tenant: "acme", Name: "alice", Role: dockettype.RoleMember}, nil
	case "dk_other":
		return dockettype.Principal{Tenant: "globex", Name: "bob", Role: dockettype.RoleMember}, nil
	case "dk_admin":
		return dockettype.Principal{Tenant: "acme", Name: "root", Role: dockettype.RoleAdmin}, nil
	}
	return dockettype.Principal{}, dockettype.NewError(dockettype.CodeUnauthenticated, "no")
}

func fakeServer(t *testing.T, exec httpapi.Executor) (*httptest.Server, *logtest.Buffer, *metrics.Metrics) {
	t.Helper()
	return fakeServerWith(t, exec, httpapi.Options{})
}

// fakeServerWith serves exec with opts (its Logger and Metrics are the
// test's).
func fakeServerWith(t *testing.T, exec httpapi.Executor, opts httpapi.Options) (*httptest.Server, *logtest.Buffer, *metrics.Metrics) {
	t.Helper()
	logger, logs := logtest.New(t)
	m := metrics.New()
	opts.Logger, opts.Metrics = logger, m
	srv := httptest.NewServer(httpapi.New(exec, fakeAuth{}, opts))
	t.Cleanup(srv.Close)
	return srv, logs, m
}

func TestPanicIsRecovered(t *testing.T) {
	t.Parallel()
	srv, logs, m := fakeServer(t, &fakeExecutor{get: func(context.Context, string) (*dockettype.Task, error) {
		panic("boom " + logtest.Canary)
	}})
	r := call(t, srv.URL, request{method: http.MethodGet, path: "/v1/tasks/x", key: "dk_test"})
	e := r.wantError(t, http.StatusInternalServerError, dockettype.CodeInternal)
	if e.Error.Message != "internal server error" {
		t.Errorf("message = %q", e.Error.Message)
	}
	lines := logLines(t, logs.String(), "http")
	if len(lines) != 2 || lines[0]["msg"] != "handler panicked" || lines[0]["code"] != "internal" ||
		lines[1]["status"] != float64(500) || lines[1]["code"] != "internal" {
		t.Fatalf("log lines = %v", lines)
	}
	if n := testutil.ToFloat64(m.HTTPRequests.WithLabelValues("GET /v1/tasks/{id}", "500")); n != 1 {
		t.Errorf("http_requests_total{GET /v1/tasks/{id},500} = %v, want 1", n)
	}
	// The server still serves.
	call(t, srv.URL, request{method: http.MethodGet, path: "/healthz"}).wantStatus(t, http.StatusOK)
}

func TestUnexpectedErrorIsHidden(t *testing.T) {
	t.Parallel()
	leaky := errors.New("SELECT input FROM tasks WHERE id = 'x': " + logtest.Canary)
	srv, _, _ := fakeServer(t, &fakeExecutor{
		get: func(context.Context, string) (*dockettype.Task, error) { return nil, leaky },
		submit: func(context.Context, *queue.SubmitRequest) (*queue.SubmitResult, error) {
			// A code the API does not answer with is internal too.
			return nil, dockettype.NewError(dockettype.CodeWorkerPanic, "SELECT leaked")
		},
	})
	r := call(t, srv.URL, request{method: http.MethodGet, path: "/v1/tasks/x", key: "dk_test"})
	r.wantError(t, http.StatusInternalServerError, dockettype.CodeInternal)
	assertNoLeak(t, r.body)
	r = submit(t, srv.URL, "dk_test", "k", `{"workflow":"demo.echo"}`)
	r.wantError(t, http.StatusInternalServerError, dockettype.CodeInternal)
	assertNoLeak(t, r.body)
}

func TestSubmitPassesRequestThrough(t *testing.T) {
	t.Parallel()
	got := make(chan *queue.SubmitRequest, 1)
	srv, _, _ := fakeServer(t, &fakeExecutor{submit: func(_ context.Context, req *queue.SubmitRequest) (*queue.SubmitResult, error) {
		got <- req
		return &queue.SubmitResult{Task: &dockettype.Task{ID: "t1"}, Replayed: true}, nil
	}})
	r := call(t, srv.URL, request{method: http.MethodPost, path: "/v1/tasks", key: "dk_test",
		body:   `{"workflow":"demo.echo","input":[1, 2],"pool":"offline","timeout_ms":5000,"priority":-3,"max_attempts":2}`,
		header: map[string]string{"Idempotency-Key": "key-1", "traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"}})
	r.wantStatus(t, http.StatusOK) // replayed
	req := <-got
	want := queue.SubmitRequest{
		IdempotencyKey: "key-1", Workflow: "demo.echo", Pool: dockettype.PoolOffline,
		TimeoutMS: 5000, Priority: -3, MaxAttempts: 2, TraceID: "4bf92f3577b34da6a3ce929d0e0e4736",
	}
	if string(req.Input) != "[1, 2]" {
		t.Errorf("input = %s", req.Input)
	}
	req.Input = nil
	if !reflect.DeepEqual(*req, want) {
		t.Fatalf("request = %+v, want %+v", *req, want)
	}
}

func TestLongPollEndsWhenClientLeaves(t *testing.T) {
	t.Parallel()
	waiting := make(chan struct{})
	ended := make(chan error, 1)
	srv, _, _ := fakeServer(t, &fakeExecutor{wait: func(ctx context.Context, _ string, d time.Duration) (*dockettype.Task, error) {
		if d != 60*time.Second {
			t.Errorf("wait = %s, want 60s", d)
		}
		close(waiting)
		<-ctx.Done()
		ended <- ctx.Err()
		return nil, ctx.Err()
	}})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-waiting
		cancel()
	}()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/v1/tasks/x?wait=60s", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer dk_test")
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatal("the request finished although the client left")
	}
	select {
	case err := <-ended:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("wait ended with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the long poll outlived its client")
	}
}

func TestAuthStoreErrorIsUnavailable(t *testing.T) {
	t.Parallel()
	logger, _ := logtest.New(t)
	authn := authFunc(func(context.Context, string) (dockettype.Principal, error) {
		return dockettype.Principal{}, errors.New("dial tcp: connection refused")
	})
	srv := httptest.NewServer(httpapi.New(&fakeExecutor{}, authn, httpapi.Options{Logger: logger}))
	t.Cleanup(srv.Close)
	r := call(t, srv.URL, request{method: http.MethodGet, path: "/v1/tasks", key: "dk_any"})
	r.wantError(t, http.StatusServiceUnavailable, dockettype.CodeStoreUnavailable)
	if strings.Contains(string(r.body), "refused") {
		t.Fatalf("answer leaks the error: %s", r.body)
	}
}

type authFunc func(ctx context.Context, key string) (dockettype.Principal, error)

func (f authFunc) Authenticate(ctx context.Context, key string) (dockettype.Principal, error) {
	return f(ctx, key)
}
