package node

import (
	"compress/gzip"
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/docket-dev/docket/client"
	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/tracing"
	"github.com/docket-dev/docket/workflow"
)

// otlpReceiver is a tiny OTLP/HTTP trace receiver: it decodes each POST
// /v1/traces (protobuf) and keeps the spans with their resource's
// service.name.
type otlpReceiver struct {
	mu      sync.Mutex
	spans   []*tracepb.Span
	service []string
	posts   int
}

func (rc *otlpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "not an OTLP/HTTP protobuf export", http.StatusNotFound)
		return
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = gz
	}
	raw, err := io.ReadAll(body)
	var req coltracepb.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(raw, &req)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rc.mu.Lock()
	rc.posts++
	for _, rs := range req.GetResourceSpans() {
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				rc.service = append(rc.service, kv.GetValue().GetStringValue())
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			rc.spans = append(rc.spans, ss.GetSpans()...)
		}
	}
	rc.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// A node started with OTEL_EXPORTER_OTLP_ENDPOINT exports its spans with
// OTLP/HTTP to that endpoint, the last ones flushed when it stops.
func TestSpansExportedWithOTLP(t *testing.T) {
	rc := &otlpReceiver{}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "")
	t.Setenv("OTEL_SERVICE_NAME", "")
	t.Setenv("OTEL_TRACES_EXPORTER", "")
	t.Setenv("OTEL_SDK_DISABLED", "")

	reg := workflow.NewRegistry()
	if err := reg.Register("trace.export", workflow.Definition{Pool: dockettype.PoolOnline,
		Run: func(context.Context, *workflow.Binding, json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`{"ok":true}`), nil
		}}); err != nil {
		t.Fatal(err)
	}
	n, key, stop := tracedNode(t, nil, reg)
	if !n.tracing.Enabled() {
		t.Fatal("tracing off with OTEL_EXPORTER_OTLP_ENDPOINT set")
	}
	task, _ := submitTraced(t, n.URL(), key, "trace.export")
	if done, err := client.New(n.URL(), key).Wait(context.Background(), task.ID, 30*time.Second); err != nil || done.State != dockettype.StateSucceeded {
		t.Fatalf("task: %+v, %v", done, err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.posts == 0 {
		t.Fatal("no export reached the receiver")
	}
	if len(rc.service) == 0 || slices.ContainsFunc(rc.service, func(s string) bool { return s != "docket" }) {
		t.Errorf("service.name %v, want docket", rc.service)
	}
	inTrace := map[string]int{}
	for _, sp := range rc.spans {
		if hex.EncodeToString(sp.GetTraceId()) == callerTrace {
			inTrace[sp.GetName()]++
		}
	}
	for _, name := range []string{"POST /v1/tasks", tracing.SpanAdmit, tracing.SpanTask, tracing.SpanQueueWait, tracing.SpanRun, tracing.SpanFinish} {
		if inTrace[name] != 1 {
			t.Errorf("%d spans %q in the caller's trace, want 1 (got %v)", inTrace[name], name, inTrace)
		}
	}
}
