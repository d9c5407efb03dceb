package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/docket-dev/docket/client"
	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/httpapi/httpapitest"
	"github.com/docket-dev/docket/internal/logtest"
	"github.com/docket-dev/docket/internal/queue"
	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/store/faultstore"
)

// TestMain fails the package on a leaked goroutine, and on a line the default
// logger received that Docket must never log (logtest.Guard).
func TestMain(m *testing.M) { goleak.VerifyTestMain(logtest.Guard(m)) }

var canaryInput = json.RawMessage(`{"msg": "` + logtest.Canary + `"}`)

var queuedOnly = queue.Config{Online: queue.PoolConfig{Workers: -1}, Offline: queue.PoolConfig{Workers: -1}}

// wantCode checks that err is a *client.Error with status and code.
func wantCode(t *testing.T, err error, status int, code dockettype.Code) *client.Error {
	t.Helper()
	var e *client.Error
	if !errors.As(err, &e) {
		t.Fatalf("err = %v, want a *client.Error", err)
	}
	if e.StatusCode != status || e.Code != string(code) || !client.IsCode(err, code) {
		t.Fatalf("err = %+v, want %d %s", e, status, code)
	}
	if e.Message == "" || len(e.TraceID) != 32 {
		t.Errorf("err = %+v: want a message and a trace id", e)
	}
	return e
}

func TestSubmitGetWait(t *testing.T) {
	t.Parallel()
	s := httpapitest.New(t, httpapitest.Options{})
	c := client.New(s.URL+"/", s.Key) // a trailing slash is fine
	ctx := context.Background()

	params := &client.SubmitParams{IdempotencyKey: "k-1", Workflow: "demo.echo", Input: canaryInput, Priority: 5}
	res, err := c.Submit(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if res.Replayed || res.Task.Tenant != "acme" || res.Task.Author != "alice" || res.Task.Priority != 5 {
		t.Fatalf("submit = %+v, %+v", res, res.Task)
	}
	task, err := c.Wait(ctx, res.Task.ID, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if task.State != dockettype.StateSucceeded || string(task.Result) != `{"msg":"`+logtest.Canary+`"}` {
		t.Fatalf("wait = %+v (result %s)", task, task.Result)
	}
	got, err := c.Get(ctx, res.Task.ID)
	if err != nil || got.State != dockettype.StateSucceeded || got.ID != res.Task.ID {
		t.Fatalf("get = %+v, %v", got, err)
	}

	// A replay, also with other whitespace.
	params.Input = json.RawMessage("{\n\t\"msg\" :\"" + logtest.Canary + "\"\n}")
	again, err := c.Submit(ctx, params)
	if err != nil || !again.Replayed || again.Task.ID != res.Task.ID {
		t.Fatalf("replay = %+v, %v", again, err)
	}
	// Another input under the same key.
	params.Input = json.RawMessage(`{"msg":"other"}`)
	_, err = c.Submit(ctx, params)
	wantCode(t, err, http.StatusConflict, dockettype.CodeIdempotencyConflict)

	// A trace parent sets the task's trace ID.
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	traced, err := c.Submit(ctx, &client.SubmitParams{IdempotencyKey: "k-2", Workflow: "demo.echo",
		TraceParent: "00-" + traceID + "-00f067aa0ba902b7-01"})
	if err != nil || traced.Task.TraceID != traceID {
		t.Fatalf("traced = %+v, %v", traced, err)
	}

	// Wait with no duration is a plain read.
	if got, err := c.Wait(ctx, traced.Task.ID, 0); err != nil || got.ID != traced.Task.ID {
		t.Fatalf("wait 0 = %+v, %v", got, err)
	}
}

func TestClientErrors(t *testing.T) {
	t.Parallel()
	s := httpapitest.New(t, httpapitest.Options{Queue: queue.Config{
		Online: queue.PoolConfig{Workers: -1, Capacity: 1}, RetryAfter: 3 * time.Second,
	}})
	ctx := context.Background()
	c := client.New(s.URL, s.Key)

	first, err := c.Submit(ctx, &client.SubmitParams{IdempotencyKey: "a", Workflow: "demo.echo"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Submit(ctx, &client.SubmitParams{IdempotencyKey: "b", Workflow: "demo.echo"})
	if e := wantCode(t, err, http.StatusTooManyRequests, dockettype.CodeQueueFull); e.RetryAfter != 3*time.Second {
		t.Errorf("RetryAfter = %s, want 3s", e.RetryAfter)
	}
	_, err = c.Submit(ctx, &client.SubmitParams{IdempotencyKey: "c", Workflow: "demo.nope"})
	wantCode(t, err, http.StatusBadRequest, dockettype.CodeUnknownWorkflow)
	_, err = c.Submit(ctx, &client.SubmitParams{Workflow: "demo.echo"})
	wantCode(t, err, http.StatusBadRequest, dockettype.CodeInvalidRequest)
	_, err = c.Get(ctx, "no-such-task")
	wantCode(t, err, http.StatusNotFound, dockettype.CodeNotFound)
	_, err = c.List(ctx, &client.ListParams{Limit: 1000})
	wantCode(t, err, http.StatusBadRequest, dockettype.CodeInvalidRequest)

	_, err = client.New(s.URL, "dk_wrong").Get(ctx, first.Task.ID)
	wantCode(t, err, http.StatusUnauthorized, dockettype.CodeUnauthenticated)
	if got := err.Error(); !strings.Contains(got, "unauthenticated") || strings.Contains(got, "dk_wrong") {
		t.Errorf("Error() = %q", got)
	}

	// Another tenant's task is not found, whatever the call.
	globex, err := s.NewKey(ctx, "globex", "bob")
	if err != nil {
		t.Fatal(err)
	}
	g := client.New(s.URL, globex)
	_, err = g.Get(ctx, first.Task.ID)
	wantCode(t, err, http.StatusNotFound, dockettype.CodeNotFound)
	_, err = g.Wait(ctx, first.Task.ID, time.Second)
	wantCode(t, err, http.StatusNotFound, dockettype.CodeNotFound)
	_, err = g.Cancel(ctx, first.Task.ID)
	wantCode(t, err, http.StatusNotFound, dockettype.CodeNotFound)
	_, err = g.Events(ctx, first.Task.ID)
	wantCode(t, err, http.StatusNotFound, dockettype.CodeNotFound)
	_, err = g.Evidence(ctx, first.Task.ID)
	wantCode(t, err, http.StatusNotFound, dockettype.CodeNotFound)
}

func TestClientStoreUnavailable(t *testing.T) {
	t.Parallel()
	var fs *faultstore.Store
	s := httpapitest.New(t, httpapitest.Options{Queue: queuedOnly, WrapStore: func(st store.Store) store.Store {
		fs = faultstore.New(st)
		return fs
	}})
	c := client.New(s.URL, s.Key)
	httpapitest.FailTasks(fs, true)
	_, err := c.Submit(context.Background(), &client.SubmitParams{IdempotencyKey: "a", Workflow: "demo.echo", Input: canaryInput})
	wantCode(t, err, http.StatusServiceUnavailable, dockettype.CodeStoreUnavailable)
}

func TestListCancelEvents(t *testing.T) {
	t.Parallel()
	var rec *startRecorder
	s := httpapitest.New(t, httpapitest.Options{WrapRuntime: func(rt queue.Runtime) queue.Runtime {
		rec = &startRecorder{Runtime: rt, started: make(chan string, 64)}
		return rec
	}})
	ctx := context.Background()
	c := client.New(s.URL, s.Key)

	var ids []string
	for i := range 3 {
		res, err := c.Submit(ctx, &client.SubmitParams{IdempotencyKey: fmt.Sprintf("s-%d", i), Workflow: "demo.sleep",
			Input: json.RawMessage(`{"ms":60000}`)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.Task.ID)
	}
	started := map[string]bool{}
	for range ids {
		started[<-rec.started] = true
	}

	// Pages of two, newest first.
	var listed []string
	p := &client.ListParams{Limit: 2, State: dockettype.StateRunning, Pool: dockettype.PoolOnline}
	for {
		page, err := c.List(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		for _, task := range page.Tasks {
			listed = append(listed, task.ID)
		}
		if page.Next == "" {
			break
		}
		p.After = page.Next
	}
	if len(listed) != 3 || listed[0] != ids[2] || listed[2] != ids[0] {
		t.Fatalf("listed %v, want the reverse of %v", listed, ids)
	}

	for _, id := range ids {
		if !started[id] {
			t.Fatalf("task %s did not start", id)
		}
		task, err := c.Cancel(ctx, id)
		if err != nil || task.State != dockettype.StateCancelled {
			t.Fatalf("cancel = %+v, %v", task, err)
		}
		// Waiting on a terminal task answers at once.
		if task, err = c.Wait(ctx, id, time.Minute); err != nil || task.State != dockettype.StateCancelled {
			t.Fatalf("wait = %+v, %v", task, err)
		}
	}
	events, err := c.Events(ctx, ids[0])
	if err != nil {
		t.Fatal(err)
	}
	var states []string
	for _, e := range events {
		states = append(states, fmt.Sprintf("%s>%s", e.From, e.To))
	}
	if got := strings.Join(states, " "); got != ">queued queued>running running>cancelled" {
		t.Fatalf("events = %s", got)
	}
	evidence, err := c.Evidence(ctx, ids[0])
	if err != nil || len(evidence) != 0 {
		t.Fatalf("evidence = %v, %v", evidence, err)
	}
	page, err := c.List(ctx, nil)
	if err != nil || len(page.Tasks) != 3 || page.Next != "" {
		t.Fatalf("list = %+v, %v", page, err)
	}
	for wf, want := range map[string]int{"demo.sleep": 3, "demo.echo": 0} {
		page, err := c.List(ctx, &client.ListParams{Workflow: wf})
		if err != nil || len(page.Tasks) != want {
			t.Fatalf("list of workflow %s = %+v, %v; want %d tasks", wf, page, err, want)
		}
	}
}

// startRecorder is a runtime that reports each task it starts.
type startRecorder struct {
	queue.Runtime
	started chan string
}

func (r *startRecorder) Run(ctx context.Context, inv *queue.Invocation) (json.RawMessage, error) {
	r.started <- inv.Task.ID
	return r.Runtime.Run(ctx, inv)
}

// TestWaitPolls checks, against a scripted server that answers at once,
// that a wait longer than the server's limit polls again until the task is
// terminal, and that a shorter one asks once.
func TestWaitPolls(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var waits []string
	terminalAt := 0 // request number answered with a terminal task
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer dk_k" || r.URL.EscapedPath() != "/v1/tasks/t%2F1" {
			t.Errorf("request %s %s", r.Header.Get("Authorization"), r.URL.EscapedPath())
		}
		mu.Lock()
		waits = append(waits, r.URL.Query().Get("wait"))
		state := dockettype.StateRunning
		if len(waits) == terminalAt {
			state = dockettype.StateSucceeded
		}
		mu.Unlock()
		_ = json.NewEncoder(w).Encode(dockettype.Task{ID: "t/1", State: state})
	}))
	t.Cleanup(srv.Close)
	c := client.New(srv.URL, "dk_k")

	mu.Lock()
	terminalAt = 3
	mu.Unlock()
	task, err := c.Wait(context.Background(), "t/1", 10*time.Minute)
	if err != nil || task.State != dockettype.StateSucceeded {
		t.Fatalf("wait = %+v, %v", task, err)
	}
	mu.Lock()
	got := strings.Join(waits, " ")
	waits, terminalAt = nil, 0
	mu.Unlock()
	if got != "1m0s 1m0s 1m0s" {
		t.Fatalf("waits = %s", got)
	}

	// A wait within the server's limit is one request, even when the task
	// is not terminal yet.
	task, err = c.Wait(context.Background(), "t/1", 5*time.Second)
	if err != nil || task.State != dockettype.StateRunning {
		t.Fatalf("wait = %+v, %v", task, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(waits) != 1 {
		t.Fatalf("waits = %v", waits)
	}
	if d, err := time.ParseDuration(waits[0]); err != nil || d <= 0 || d > 5*time.Second {
		t.Fatalf("wait = %q", waits[0])
	}
}

func TestNonEnvelopeError(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "7")
		w.Header().Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
		http.Error(w, "<html>bad gateway</html>", http.StatusBadGateway)
	}))
	t.Cleanup(srv.Close)
	_, err := client.New(srv.URL, "dk_k").Get(context.Background(), "x")
	var e *client.Error
	if !errors.As(err, &e) || e.StatusCode != http.StatusBadGateway || e.Code != "" || e.RetryAfter != 7*time.Second ||
		e.TraceID != "4bf92f3577b34da6a3ce929d0e0e4736" || e.Message != "Bad Gateway" {
		t.Fatalf("err = %#v", err)
	}
	if client.IsCode(err, "") {
		t.Error(`IsCode(err, "") is true`)
	}
}

func TestContextCancelled(t *testing.T) {
	t.Parallel()
	s := httpapitest.New(t, httpapitest.Options{Queue: queuedOnly})
	c := client.New(s.URL, s.Key)
	res, err := c.Submit(context.Background(), &client.SubmitParams{IdempotencyKey: "a", Workflow: "demo.echo"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	// The task stays queued: the long poll ends with the context.
	_, err = c.Wait(ctx, res.Task.ID, time.Minute)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the context's deadline", err)
	}
}

// A long poll refused with 429 too_many_requests is asked again after
// Retry-After, within the wait.
func TestWaitRetriesRefusedLongPoll(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		if n == 1 {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"error":{"code":"too_many_requests","message":"too many long polls","trace_id":"4bf92f3577b34da6a3ce929d0e0e4736"}}`)
			return
		}
		_ = json.NewEncoder(w).Encode(dockettype.Task{ID: "t", State: dockettype.StateSucceeded})
	}))
	t.Cleanup(srv.Close)
	task, err := client.New(srv.URL, "dk_k").Wait(context.Background(), "t", 30*time.Second)
	if err != nil || task.State != dockettype.StateSucceeded {
		t.Fatalf("wait = %+v, %v", task, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls != 2 {
		t.Fatalf("%d requests, want 2", calls)
	}
}
