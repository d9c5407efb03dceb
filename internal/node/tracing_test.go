package node

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/docket-dev/docket/client"
	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/logtest"
	"github.com/docket-dev/docket/internal/tracing"
	"github.com/docket-dev/docket/internal/tracing/otlp"
	"github.com/docket-dev/docket/worker"
	"github.com/docket-dev/docket/workflow"
)

// The caller's span, as a traceparent; its input, result and idempotency
// key, which no span may carry.
const (
	callerTrace  = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerSpan   = "00f067aa0ba902b7"
	secretInput  = "input-7d1c-secret"
	secretResult = "result-90ab-secret"
	secretKey    = "idem-55e3-secret"
	secretFail   = "failure-message-3f2e-secret"
)

// tracedNode runs a demo node on a temporary SQLite file whose spans go to
// tp (nil: the node sets tracing up from the environment), and returns it
// with the demo (admin) key and its stop (once; the test's end stops it
// too). Stop it to see every span ended.
func tracedNode(t *testing.T, tp trace.TracerProvider, reg *workflow.Registry) (*Node, string, func() error) {
	t.Helper()
	logger, _ := logtest.New(t)
	if reg == nil {
		reg = workflow.NewRegistry()
	}
	n, err := New(context.Background(), Config{DB: filepath.Join(t.TempDir(), "docket.db"), Listen: "127.0.0.1:0",
		Logger: logger, Workflows: reg}, Options{TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	key, err := n.Bootstrap(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	var (
		once sync.Once
		err2 error
	)
	stop := func() error {
		once.Do(func() { err2 = n.Stop() })
		return err2
	}
	t.Cleanup(func() { _ = stop() })
	return n, key, stop
}

// submitTraced submits workflow's task with the caller's traceparent and
// returns the task and the answer's traceparent.
func submitTraced(t *testing.T, url, key, wf string) (*dockettype.Task, string) {
	t.Helper()
	return submitWithFlags(t, url, key, wf, "01", secretKey)
}

// submitWithFlags is submitTraced with the traceparent's flags and the
// idempotency key given.
func submitWithFlags(t *testing.T, url, key, wf, flags, idem string) (*dockettype.Task, string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"workflow": wf, "input": map[string]string{"secret": secretInput}})
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/tasks", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", idem)
	req.Header.Set("traceparent", "00-"+callerTrace+"-"+callerSpan+"-"+flags)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var task dockettype.Task
	if err := json.NewDecoder(resp.Body).Decode(&task); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("submit: %d, %v", resp.StatusCode, err)
	}
	return &task, resp.Header.Get("traceparent")
}

// nodeAndWorkerRecorders returns a node's provider (as package otlp makes
// it) and a remote worker's, each recording its spans, shut down at the
// test's end.
func nodeAndWorkerRecorders(t *testing.T) (tp *otlp.Provider, rec *tracetest.SpanRecorder,
	wtp *sdktrace.TracerProvider, wrec *tracetest.SpanRecorder) {
	rec, wrec = tracetest.NewSpanRecorder(), tracetest.NewSpanRecorder()
	tp = recordingProvider(t, rec)
	wtp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(wrec))
	t.Cleanup(func() {
		_ = tp.Shutdown(context.Background())
		_ = wtp.Shutdown(context.Background())
	})
	return tp, rec, wtp, wrec
}

// recordingProvider is a node's provider as package otlp makes it, its
// spans (started or written ended) going to rec, shut down at the test's
// end.
func recordingProvider(t *testing.T, rec *tracetest.SpanRecorder) *otlp.Provider {
	tp, err := otlp.NewProvider(rec, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp
}

// remoteWorker registers the remote workflow trace.remote on n and returns
// the admin client and a Go SDK worker of tenant demo whose spans go to
// wtp (not running: see runWorker).
func remoteWorker(t *testing.T, n *Node, key string, wtp trace.TracerProvider) (*client.Client, *worker.Worker) {
	t.Helper()
	admin := client.New(n.URL(), key)
	ctx := context.Background()
	if err := admin.Call(ctx, "PUT", "/v1/admin/workflows/trace.remote", map[string]any{"pool": "online"}, nil); err != nil {
		t.Fatal(err)
	}
	var k struct{ Key string }
	if err := admin.Call(ctx, "POST", "/v1/admin/keys",
		map[string]any{"tenant": "demo", "principal": "fleet", "role": "worker"}, &k); err != nil {
		t.Fatal(err)
	}
	logger, _ := logtest.New(t)
	return admin, worker.New(n.URL(), k.Key, worker.Options{Wait: time.Second, TracerProvider: wtp, Logger: logger})
}

// runWorker runs w until the stop it returns, which answers Run's error.
func runWorker(w *worker.Worker) (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- w.Run(ctx) }()
	return func() error {
		cancel()
		return <-ran
	}
}

// spanSet indexes ended spans by name.
type spanSet map[string][]sdktrace.ReadOnlySpan

func indexSpans(spans []sdktrace.ReadOnlySpan) spanSet {
	s := spanSet{}
	for _, sp := range spans {
		s[sp.Name()] = append(s[sp.Name()], sp)
	}
	return s
}

// one returns the only span of that name.
func (s spanSet) one(t *testing.T, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	if len(s[name]) != 1 {
		t.Fatalf("%d spans %q, want 1 (spans: %v)", len(s[name]), name, s.names())
	}
	return s[name][0]
}

func (s spanSet) names() []string {
	var out []string
	for n := range s {
		out = append(out, n)
	}
	return out
}

func attr(sp sdktrace.ReadOnlySpan, key string) string {
	for _, kv := range sp.Attributes() {
		if string(kv.Key) == key {
			return kv.Value.Emit()
		}
	}
	return ""
}

// wantParent checks that sp is in the caller's trace, under parent.
func wantParent(t *testing.T, sp sdktrace.ReadOnlySpan, parent trace.SpanID) {
	t.Helper()
	if got := sp.SpanContext().TraceID().String(); got != callerTrace {
		t.Errorf("%s: trace %s, want the caller's %s", sp.Name(), got, callerTrace)
	}
	if got := sp.Parent().SpanID(); got != parent {
		t.Errorf("%s: parent %s, want %s", sp.Name(), got, parent)
	}
}

// noSecrets checks that no span carries the input, the result, the
// idempotency key or the failure message, in any attribute, name, status,
// event or link.
func noSecrets(t *testing.T, spans []sdktrace.ReadOnlySpan) {
	t.Helper()
	for _, sp := range spans {
		texts := []string{sp.Name(), sp.Status().Description}
		for _, kv := range sp.Attributes() {
			texts = append(texts, string(kv.Key), kv.Value.Emit())
		}
		for _, ev := range sp.Events() {
			texts = append(texts, ev.Name)
			for _, kv := range ev.Attributes {
				texts = append(texts, string(kv.Key), kv.Value.Emit())
			}
		}
		for _, l := range sp.Links() {
			for _, kv := range l.Attributes {
				texts = append(texts, kv.Value.Emit())
			}
		}
		for _, kv := range sp.Resource().Attributes() {
			texts = append(texts, kv.Value.Emit())
		}
		for _, s := range texts {
			for _, secret := range []string{secretInput, secretResult, secretKey, secretFail, "SELECT", "INSERT", "UPDATE"} {
				if strings.Contains(s, secret) {
					t.Errorf("span %s carries %q: %q", sp.Name(), secret, s)
				}
			}
		}
	}
}

// A submit with a traceparent yields, under the caller's trace: the
// request's server span (child of the caller's span), the admission span,
// the task's span, its wait in the queue, the in-process run (whose
// context the workflow's own spans join) and the fenced finish. No span
// carries the input or the result.
func TestTraceOfAnInProcessTask(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	tp := recordingProvider(t, rec)
	reg := workflow.NewRegistry()
	if err := reg.Register("trace.echo", workflow.Definition{Pool: dockettype.PoolOnline,
		Run: func(ctx context.Context, b *workflow.Binding, input json.RawMessage) (json.RawMessage, error) {
			_, own := trace.SpanFromContext(ctx).TracerProvider().Tracer("test").Start(ctx, "workflow.own")
			own.End()
			return json.RawMessage(`{"secret":"` + secretResult + `"}`), nil
		}}); err != nil {
		t.Fatal(err)
	}
	n, key, stop := tracedNode(t, tp, reg)
	task, answer := submitTraced(t, n.URL(), key, "trace.echo")
	if task.TraceID != callerTrace {
		t.Fatalf("task trace_id %q, want the caller's", task.TraceID)
	}
	done, err := client.New(n.URL(), key).Wait(context.Background(), task.ID, 30*time.Second)
	if err != nil || done.State != dockettype.StateSucceeded {
		t.Fatalf("task: %+v, %v", done, err)
	}
	if err := stop(); err != nil { // every request and outcome is then done
		t.Fatal(err)
	}

	spans := rec.Ended()
	s := indexSpans(spans)
	req := s.one(t, "POST /v1/tasks")
	wantParent(t, req, mustSpanID(t, callerSpan))
	if !req.Parent().IsRemote() || req.SpanKind() != trace.SpanKindServer {
		t.Errorf("request span: parent remote %v, kind %v", req.Parent().IsRemote(), req.SpanKind())
	}
	if want := "00-" + callerTrace + "-" + req.SpanContext().SpanID().String() + "-01"; answer != want {
		t.Errorf("answer traceparent %q, want the server span's %q", answer, want)
	}
	if attr(req, "http.response.status_code") != "201" || attr(req, "http.route") != "POST /v1/tasks" || attr(req, "docket.tenant") != "demo" {
		t.Errorf("request span attributes %v", req.Attributes())
	}
	admit := s.one(t, tracing.SpanAdmit)
	wantParent(t, admit, req.SpanContext().SpanID())
	if attr(admit, "docket.items") != "1" || attr(admit, "docket.batch") == "" {
		t.Errorf("admission span attributes %v", admit.Attributes())
	}
	taskSpan := s.one(t, tracing.SpanTask)
	wantParent(t, taskSpan, admit.SpanContext().SpanID())
	if taskSpan.SpanContext().SpanID() != tracing.TaskSpanID(task.ID) {
		t.Errorf("task span ID %s, want the one derived from the task", taskSpan.SpanContext().SpanID())
	}
	if attr(taskSpan, "docket.task.id") != task.ID || attr(taskSpan, "docket.workflow") != "trace.echo" ||
		attr(taskSpan, "docket.pool") != "online" || attr(taskSpan, "docket.tenant") != "demo" {
		t.Errorf("task span attributes %v", taskSpan.Attributes())
	}
	for _, name := range []string{tracing.SpanQueueWait, tracing.SpanRun, tracing.SpanFinish} {
		sp := s.one(t, name)
		wantParent(t, sp, taskSpan.SpanContext().SpanID())
		if attr(sp, "docket.task.id") != task.ID || attr(sp, "docket.attempt") != "1" {
			t.Errorf("%s attributes %v", name, sp.Attributes())
		}
	}
	wait, run, fin := s.one(t, tracing.SpanQueueWait), s.one(t, tracing.SpanRun), s.one(t, tracing.SpanFinish)
	if !wait.StartTime().Equal(task.CreatedAt) || wait.EndTime().After(run.StartTime()) {
		t.Errorf("queue wait %v–%v, want from admission (%v) to before the run (%v)",
			wait.StartTime(), wait.EndTime(), task.CreatedAt, run.StartTime())
	}
	if attr(run, "docket.outcome") != "succeed" || attr(fin, "docket.outcome") != "succeed" ||
		attr(fin, "docket.state") != "succeeded" || attr(fin, "docket.fenced") != "" {
		t.Errorf("run %v, finish %v", run.Attributes(), fin.Attributes())
	}
	wantParent(t, s.one(t, "workflow.own"), run.SpanContext().SpanID())
	noSecrets(t, spans)
}

// A failing attempt's spans carry its code, not its message.
func TestTraceOfAFailedTask(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	tp := recordingProvider(t, rec)
	reg := workflow.NewRegistry()
	if err := reg.Register("trace.fail", workflow.Definition{Pool: dockettype.PoolOnline,
		Run: func(ctx context.Context, b *workflow.Binding, input json.RawMessage) (json.RawMessage, error) {
			return nil, workflow.Fail(dockettype.CodeInvalidInput, secretFail, false)
		}}); err != nil {
		t.Fatal(err)
	}
	n, key, stop := tracedNode(t, tp, reg)
	task, _ := submitTraced(t, n.URL(), key, "trace.fail")
	done, err := client.New(n.URL(), key).Wait(context.Background(), task.ID, 30*time.Second)
	if err != nil || done.State != dockettype.StateFailed {
		t.Fatalf("task: %+v, %v", done, err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	spans := rec.Ended()
	s := indexSpans(spans)
	run, fin := s.one(t, tracing.SpanRun), s.one(t, tracing.SpanFinish)
	for _, sp := range []sdktrace.ReadOnlySpan{run, fin} {
		if attr(sp, "docket.outcome") != "fail" || attr(sp, "docket.error.code") != string(dockettype.CodeInvalidInput) {
			t.Errorf("%s attributes %v", sp.Name(), sp.Attributes())
		}
	}
	noSecrets(t, spans)
}

// A remote worker's attempt joins the task's trace: the claim carries the
// task span's traceparent, the Go worker SDK makes its span a child of it
// (and the handler's context carries that span), and the server's queue
// wait and finish are in the same trace, the finish linked to the worker's
// finish request.
func TestTraceOfARemoteTask(t *testing.T) {
	t.Parallel()
	tp, rec, wtp, wrec := nodeAndWorkerRecorders(t)

	n, key, stop := tracedNode(t, tp, nil)
	admin, w := remoteWorker(t, n, key, wtp)
	ctx := context.Background()
	var seen atomic.Value
	w.Handle("trace.remote", func(ctx context.Context, task *worker.Task) (any, error) {
		seen.Store(task.Traceparent)
		_, own := trace.SpanFromContext(ctx).TracerProvider().Tracer("test").Start(ctx, "handler.own")
		own.End()
		return map[string]string{"secret": secretResult}, nil
	})
	stopWorker := runWorker(w)

	task, _ := submitTraced(t, n.URL(), key, "trace.remote")
	done, err := admin.Wait(ctx, task.ID, 30*time.Second)
	if err != nil || done.State != dockettype.StateSucceeded {
		t.Fatalf("task: %+v, %v", done, err)
	}
	if err := stopWorker(); err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	taskSpan := tracing.TaskSpanID(task.ID)
	if want := "00-" + callerTrace + "-" + taskSpan.String() + "-01"; seen.Load() != want {
		t.Errorf("handler's traceparent %v, want %s", seen.Load(), want)
	}
	ws := indexSpans(wrec.Ended())
	wrun := ws.one(t, "docket.worker.run")
	wantParent(t, wrun, taskSpan)
	if attr(wrun, "docket.task.id") != task.ID || attr(wrun, "docket.outcome") != "succeeded" {
		t.Errorf("worker span attributes %v", wrun.Attributes())
	}
	wantParent(t, ws.one(t, "handler.own"), wrun.SpanContext().SpanID())

	spans := rec.Ended()
	s := indexSpans(spans)
	s.one(t, tracing.SpanTask)
	wait := s.one(t, tracing.SpanQueueWait)
	wantParent(t, wait, taskSpan)
	if attr(wait, "docket.remote") != "true" {
		t.Errorf("queue wait attributes %v", wait.Attributes())
	}
	fin := s.one(t, tracing.SpanFinish)
	wantParent(t, fin, taskSpan)
	if attr(fin, "docket.outcome") != "succeed" || attr(fin, "docket.state") != "succeeded" || attr(fin, "docket.attempt") != "1" {
		t.Errorf("finish attributes %v", fin.Attributes())
	}
	finReq := s.one(t, "POST /v1/worker/finish")
	if len(fin.Links()) != 1 || fin.Links()[0].SpanContext.SpanID() != finReq.SpanContext().SpanID() {
		t.Errorf("finish links %v, want the finish request's span %s", fin.Links(), finReq.SpanContext().SpanID())
	}
	noSecrets(t, append(spans, wrec.Ended()...))
}

// A caller's unsampled traceparent (flags 00) holds for the task's whole
// life: under the default parent-based sampler no span of it is recorded,
// neither the request's nor those written later on the claiming node (the
// wait, the run, the finish, remote or in-process), and a remote worker
// is handed the task span's traceparent with flags 00, so that its SDK
// records nothing either. A sampled caller's task beside it is traced.
func TestUnsampledCallerTrace(t *testing.T) {
	t.Parallel()
	tp, rec, wtp, wrec := nodeAndWorkerRecorders(t)
	reg := workflow.NewRegistry()
	if err := reg.Register("trace.local", workflow.Definition{Pool: dockettype.PoolOnline,
		Run: func(context.Context, *workflow.Binding, json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`{}`), nil
		}}); err != nil {
		t.Fatal(err)
	}
	n, key, stop := tracedNode(t, tp, reg)
	admin, w := remoteWorker(t, n, key, wtp)
	ctx := context.Background()
	var seen sync.Map // task ID → the traceparent its handler saw
	w.Handle("trace.remote", func(ctx context.Context, task *worker.Task) (any, error) {
		seen.Store(task.ID, task.Traceparent)
		return map[string]string{}, nil
	})
	stopWorker := runWorker(w)

	unsampledLocal, answer := submitWithFlags(t, n.URL(), key, "trace.local", "00", "u-local")
	if !strings.HasSuffix(answer, "-00") {
		t.Errorf("answer traceparent %q, want it unsampled", answer)
	}
	unsampledRemote, _ := submitWithFlags(t, n.URL(), key, "trace.remote", "00", "u-remote")
	sampledRemote, _ := submitWithFlags(t, n.URL(), key, "trace.remote", "01", "s-remote")
	for _, task := range []*dockettype.Task{unsampledLocal, unsampledRemote, sampledRemote} {
		if done, err := admin.Wait(ctx, task.ID, 30*time.Second); err != nil || done.State != dockettype.StateSucceeded {
			t.Fatalf("task: %+v, %v", done, err)
		}
	}
	if err := stopWorker(); err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	for id, flags := range map[string]string{unsampledRemote.ID: "00", sampledRemote.ID: "01"} {
		want := "00-" + callerTrace + "-" + tracing.TaskSpanID(id).String() + "-" + flags
		if got, _ := seen.Load(id); got != want {
			t.Errorf("handler of %s saw traceparent %v, want %s", id, got, want)
		}
	}
	// The recorders keep only recorded spans: every one must be of the
	// sampled task (its request, admission, task, wait and finish), or of
	// a request that carried no traceparent (the worker's own calls).
	unsampled := map[trace.SpanID]bool{tracing.TaskSpanID(unsampledLocal.ID): true, tracing.TaskSpanID(unsampledRemote.ID): true}
	var sampledSpans []string
	for _, sp := range append(rec.Ended(), wrec.Ended()...) {
		if unsampled[sp.Parent().SpanID()] || unsampled[sp.SpanContext().SpanID()] {
			t.Errorf("span %s of an unsampled task was recorded", sp.Name())
		}
		if attr(sp, "docket.task.id") == unsampledLocal.ID || attr(sp, "docket.task.id") == unsampledRemote.ID {
			t.Errorf("span %s names an unsampled task", sp.Name())
		}
		if sp.Parent().SpanID() == tracing.TaskSpanID(sampledRemote.ID) {
			sampledSpans = append(sampledSpans, sp.Name())
		}
	}
	slices.Sort(sampledSpans)
	if want := []string{tracing.SpanFinish, tracing.SpanQueueWait, tracing.SpanWorkerRun}; !slices.Equal(sampledSpans, want) {
		t.Errorf("spans under the sampled task's span = %v, want %v", sampledSpans, want)
	}
}

// Tracing is off without an OTLP endpoint: the node records no span (the
// no-op provider), and answers traceparent as before.
func TestTracingOffWithoutEndpoint(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	n, key, _ := tracedNode(t, nil, nil)
	if n.tracing.Enabled() {
		t.Fatal("tracing on without an endpoint")
	}
	reg := n.svc.Config().TracerProvider
	if tracing.Enabled(reg) {
		t.Fatalf("the queue's provider %T records", reg)
	}
	req, _ := http.NewRequest(http.MethodGet, n.URL()+"/v1/tasks/0190f5d6-0000-7000-8000-000000000000", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("traceparent", "00-"+callerTrace+"-"+callerSpan+"-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if tp := resp.Header.Get("traceparent"); !strings.HasPrefix(tp, "00-"+callerTrace+"-") || strings.Contains(tp, callerSpan) {
		t.Fatalf("traceparent %q, want the caller's trace with a new span", tp)
	}
}

// With tracing off a caller's traceparent still decides the task's trace
// and its sampled flag: the answer echoes the flag, and a remote worker is
// handed the task span's traceparent with it, for its own tracing.
func TestCallerSampledFlagWithTracingOff(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	n, key, stop := tracedNode(t, nil, nil)
	_, w := remoteWorker(t, n, key, nil)
	var seen sync.Map // task ID → the traceparent its handler saw
	w.Handle("trace.remote", func(ctx context.Context, task *worker.Task) (any, error) {
		seen.Store(task.ID, task.Traceparent)
		return map[string]string{}, nil
	})
	stopWorker := runWorker(w)
	admin := client.New(n.URL(), key)
	want := map[string]string{}
	for _, flags := range []string{"00", "01"} {
		task, answer := submitWithFlags(t, n.URL(), key, "trace.remote", flags, "off-"+flags)
		if task.TraceID != callerTrace || !strings.HasSuffix(answer, "-"+flags) {
			t.Errorf("flags %s: task trace %s, answer traceparent %q; want the caller's trace and flags", flags, task.TraceID, answer)
		}
		if done, err := admin.Wait(context.Background(), task.ID, 30*time.Second); err != nil || done.State != dockettype.StateSucceeded {
			t.Fatalf("task: %+v, %v", done, err)
		}
		want[task.ID] = "00-" + callerTrace + "-" + tracing.TaskSpanID(task.ID).String() + "-" + flags
	}
	if err := stopWorker(); err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	for id, tp := range want {
		if got, _ := seen.Load(id); got != tp {
			t.Errorf("handler of %s saw traceparent %v, want %s", id, got, tp)
		}
	}
}

func mustSpanID(t *testing.T, s string) trace.SpanID {
	t.Helper()
	id, err := trace.SpanIDFromHex(s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}
