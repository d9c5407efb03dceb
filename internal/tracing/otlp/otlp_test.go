package otlp

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"

	"github.com/docket-dev/docket/internal/tracing"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestConfigured(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want bool
	}{
		{map[string]string{}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4318", "OTEL_SDK_DISABLED": "true"}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4318", "OTEL_SDK_DISABLED": "false"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4318", "OTEL_TRACES_EXPORTER": "none"}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4318", "OTEL_TRACES_EXPORTER": "otlp"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://x:4318"}, false},
	} {
		if got := Configured(func(k string) string { return c.env[k] }); got != c.want {
			t.Errorf("Configured(%v) = %v, want %v", c.env, got, c.want)
		}
	}
}

// Off, the provider is the API's no-op one, which components skip, and
// Shutdown does nothing.
func TestFromEnvOff(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	p, err := FromEnv(context.Background(), "test")
	if err != nil || p.Enabled() || tracing.Enabled(p.TracerProvider) || p.Shutdown(context.Background()) != nil {
		t.Fatalf("FromEnv = %+v, %v; want off", p, err)
	}
}

func TestUnknownProtocol(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/json")
	if _, err := FromEnv(context.Background(), "test"); err == nil {
		t.Fatal("http/json accepted")
	}
}

// The ID generator gives a span the IDs tracing.WithIDs asks for: the
// span ID under a parent, both IDs for a root; random ones otherwise.
func TestIDGenerator(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp, err := NewProvider(rec, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Shutdown(context.Background())
	tr := tp.Tracer("test")
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid := tracing.TaskSpanID("task-1")

	ctx, parent := tr.Start(context.Background(), "parent")
	_, child := tr.Start(tracing.WithIDs(ctx, tid, sid), "child")
	if child.SpanContext().SpanID() != sid || child.SpanContext().TraceID() != parent.SpanContext().TraceID() {
		t.Errorf("child %v, want span %s in the parent's trace", child.SpanContext(), sid)
	}
	_, root := tr.Start(tracing.WithIDs(ctx, tid, sid), "root", trace.WithNewRoot())
	if root.SpanContext().SpanID() != sid || root.SpanContext().TraceID() != tid {
		t.Errorf("root %v, want %s/%s", root.SpanContext(), tid, sid)
	}
	_, plain := tr.Start(ctx, "plain")
	if plain.SpanContext().SpanID() == sid || !plain.SpanContext().IsValid() {
		t.Errorf("plain span %v", plain.SpanContext())
	}
	for _, s := range []trace.Span{plain, root, child, parent} {
		s.End()
	}
	if len(rec.Ended()) != 4 {
		t.Fatalf("%d spans ended", len(rec.Ended()))
	}
}

// Docket's queue and batch sizes apply where the OTEL_BSP_ variables are
// not set, and only there.
func TestBatchOptions(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want int
	}{
		{map[string]string{}, 2},
		{map[string]string{"OTEL_BSP_MAX_QUEUE_SIZE": "4096"}, 1},
		{map[string]string{"OTEL_BSP_MAX_QUEUE_SIZE": "4096", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "512"}, 0},
	} {
		if got := batchOptions(func(k string) string { return c.env[k] }); len(got) != c.want {
			t.Errorf("%v: %d options, want %d", c.env, len(got), c.want)
		}
	}
	var o sdktrace.BatchSpanProcessorOptions
	for _, opt := range batchOptions(func(string) string { return "" }) {
		opt(&o)
	}
	if o.MaxQueueSize != batchQueue || o.MaxExportBatchSize != batchExport {
		t.Errorf("options set %+v", o)
	}
}
