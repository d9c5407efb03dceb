package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/docket-dev/docket/client"
	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/logtest"
	"github.com/docket-dev/docket/internal/tracing"
)

// TestBinaryExportsSpans runs `docket serve` with OTEL_EXPORTER_OTLP_ENDPOINT
// (and headers) pointing at a receiver started here, submits a task under
// a caller's traceparent, and stops the server with SIGTERM: every span of
// the task's life reached the receiver, in the caller's trace, the last
// ones flushed on the way out, each request carrying the headers.
func TestBinaryExportsSpans(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the server binary")
	}
	const caller = "4bf92f3577b34da6a3ce929d0e0e4736"
	var (
		mu      sync.Mutex
		names   = map[string]int{} // span name → spans in the caller's trace
		badAuth int
	)
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, err := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		if err != nil || r.URL.Path != "/v1/traces" || proto.Unmarshal(raw, &req) != nil {
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer collector-key" {
			badAuth++
		}
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, sp := range ss.Spans {
					if hex.EncodeToString(sp.TraceId) == caller {
						names[sp.Name]++
					}
				}
			}
		}
	}))
	defer rc.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rc.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "Authorization=Bearer%20collector-key")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "")

	srv := serveOneTask(t, "00-"+caller+"-00f067aa0ba902b7-01")
	if err := srv.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := srv.cmd.Wait(); err != nil {
		t.Fatalf("serve exited with %v after SIGTERM; stderr:\n%s", err, srv.stderr.String())
	}
	logtest.Check(t, srv.stderr.String())

	mu.Lock()
	defer mu.Unlock()
	if badAuth > 0 {
		t.Errorf("%d exports without the configured header", badAuth)
	}
	for _, name := range []string{"POST /v1/tasks", tracing.SpanAdmit, tracing.SpanTask, tracing.SpanQueueWait,
		tracing.SpanRun, tracing.SpanFinish} {
		if names[name] != 1 {
			t.Errorf("%d spans %q in the caller's trace, want 1 (received %v)", names[name], name, names)
		}
	}
}

// TestBinaryCollectorDown runs `docket serve` with an OTLP endpoint nothing
// listens on: tasks run as ever, and the failed exports are one JSON log
// line (with no error text), never OpenTelemetry's plain-text lines.
func TestBinaryCollectorDown(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the server binary")
	}
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", down.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "")
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
	t.Setenv("OTEL_BSP_EXPORT_TIMEOUT", "1000")

	srv := serveOneTask(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if !srv.stderr.Await(ctx, func(logs string) bool { return strings.Contains(logs, "tracing: spans not exported") }) {
		t.Fatalf("no line about the failed exports; stderr:\n%s", srv.stderr.String())
	}
	if err := srv.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := srv.cmd.Wait(); err != nil {
		t.Fatalf("serve exited with %v after SIGTERM; stderr:\n%s", err, srv.stderr.String())
	}
	logs := srv.stderr.String()
	logtest.Check(t, logs)
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		if !json.Valid([]byte(line)) {
			t.Errorf("a log line that is not JSON: %q", line)
		}
	}
	if strings.Contains(logs, "could not be reached") {
		t.Errorf("the exporter's error text was logged:\n%s", logs)
	}
}

// serveOneTask builds and starts `docket serve` (with the test's
// environment), and runs one demo.echo task to success under traceparent
// (none when ""). The server is left running.
func serveOneTask(t *testing.T, traceparent string) *serverProc {
	t.Helper()
	bin := buildDocket(t)
	addr := freeAddr(t)
	srv := startServer(t, bin, filepath.Join(t.TempDir(), "docket.db"), addr, true)
	c := client.New("http://"+addr, srv.key)
	res, err := c.Submit(context.Background(), &client.SubmitParams{IdempotencyKey: "one", Workflow: "demo.echo",
		Input: json.RawMessage(`{"n":1}`), TraceParent: traceparent})
	if err != nil {
		t.Fatal(err)
	}
	if done, err := c.Wait(context.Background(), res.Task.ID, 30*time.Second); err != nil || done.State != dockettype.StateSucceeded {
		t.Fatalf("task: %+v, %v", done, err)
	}
	return srv
}
