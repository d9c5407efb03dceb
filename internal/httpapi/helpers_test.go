package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/docket-dev/docket/internal/logtest"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/auth"
	"github.com/docket-dev/docket/internal/httpapi"
	"github.com/docket-dev/docket/internal/queue"
)

// The real service and authenticator satisfy the consumer-side interfaces.
var (
	_ httpapi.Executor      = (*queue.Service)(nil)
	_ httpapi.Authenticator = (*auth.Authenticator)(nil)
)

// TestMain fails the package on a leaked goroutine, and on a line the default
// logger received that Docket must never log (logtest.Guard).
func TestMain(m *testing.M) { goleak.VerifyTestMain(logtest.Guard(m)) }

// request is one call to the API.
type request struct {
	method string
	path   string // with the query, if any
	key    string // bearer key; empty sends no Authorization header
	body   string
	header map[string]string
}

// response is an answer, read whole.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) task(t *testing.T) *dockettype.Task {
	t.Helper()
	var task dockettype.Task
	r.decode(t, &task)
	return &task
}

func (r response) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
}

// apiError is the error envelope.
type apiError struct {
	Error struct {
		Code    dockettype.Code `json:"code"`
		Message string          `json:"message"`
		TraceID string          `json:"trace_id"`
	} `json:"error"`
}

// wantError checks the status, the envelope's code and that its trace ID is
// the traceparent header's.
func (r response) wantError(t *testing.T, status int, code dockettype.Code) apiError {
	t.Helper()
	if r.status != status {
		t.Fatalf("status = %d, want %d (body %s)", r.status, status, r.body)
	}
	var e apiError
	r.decode(t, &e)
	if e.Error.Code != code {
		t.Fatalf("code = %q, want %q (body %s)", e.Error.Code, code, r.body)
	}
	if e.Error.Message == "" {
		t.Errorf("error without a message: %s", r.body)
	}
	if got := traceIDOf(r.header.Get("traceparent")); e.Error.TraceID == "" || e.Error.TraceID != got {
		t.Errorf("trace_id = %q, traceparent trace id %q", e.Error.TraceID, got)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
	return e
}

func (r response) wantStatus(t *testing.T, status int) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status = %d, want %d (body %s)", r.status, status, r.body)
	}
}

func call(t *testing.T, baseURL string, req request) response {
	t.Helper()
	return callContext(t, context.Background(), baseURL, req)
}

func callContext(t *testing.T, ctx context.Context, baseURL string, req request) response {
	t.Helper()
	var body io.Reader
	if req.body != "" {
		body = strings.NewReader(req.body)
	}
	hr, err := http.NewRequestWithContext(ctx, req.method, baseURL+req.path, body)
	if err != nil {
		t.Fatal(err)
	}
	if req.key != "" {
		hr.Header.Set("Authorization", "Bearer "+req.key)
	}
	if req.body != "" {
		hr.Header.Set("Content-Type", "application/json")
	}
	for k, v := range req.header {
		hr.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		t.Fatalf("%s %s: %v", req.method, req.path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

// submit posts a submission with an Idempotency-Key.
func submit(t *testing.T, baseURL, key, idemKey, body string) response {
	t.Helper()
	return call(t, baseURL, request{
		method: http.MethodPost, path: "/v1/tasks", key: key, body: body,
		header: map[string]string{"Idempotency-Key": idemKey},
	})
}

// mustSubmit submits and expects 201.
func mustSubmit(t *testing.T, baseURL, key, idemKey, body string) *dockettype.Task {
	t.Helper()
	r := submit(t, baseURL, key, idemKey, body)
	r.wantStatus(t, http.StatusCreated)
	return r.task(t)
}

func traceIDOf(tp string) string {
	parts := strings.Split(tp, "-")
	if len(parts) != 4 {
		return ""
	}
	return parts[1]
}

// logLines returns the JSON log lines of a component.
func logLines(t *testing.T, logs string, component string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range bytes.Split([]byte(logs), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("log line is not JSON: %s", line)
		}
		if m["component"] == component {
			out = append(out, m)
		}
	}
	return out
}

// startRecorder is a runtime that reports each task it starts, so tests
// wait on a signal rather than a sleep.
type startRecorder struct {
	queue.Runtime
	started chan string
}

func newStartRecorder(rt queue.Runtime) *startRecorder {
	return &startRecorder{Runtime: rt, started: make(chan string, 64)}
}

func (r *startRecorder) Run(ctx context.Context, inv *queue.Invocation) (json.RawMessage, error) {
	r.started <- inv.Task.ID
	return r.Runtime.Run(ctx, inv)
}
