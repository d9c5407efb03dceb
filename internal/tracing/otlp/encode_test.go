package otlp

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// captureServer is an OTLP/HTTP receiver that keeps the bodies it is sent.
type captureServer struct {
	*httptest.Server
	mu     sync.Mutex
	bodies [][]byte
	header http.Header
}

func newCaptureServer(t testing.TB) *captureServer {
	c := &captureServer{}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		c.mu.Lock()
		c.bodies, c.header = append(c.bodies, raw), r.Header.Clone()
		c.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	t.Cleanup(c.Close)
	return c
}

func (c *captureServer) requests(t testing.TB) []*coltracepb.ExportTraceServiceRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*coltracepb.ExportTraceServiceRequest
	for _, raw := range c.bodies {
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(raw, &req); err != nil {
			t.Fatalf("a body that is no export request: %v", err)
		}
		out = append(out, &req)
	}
	return out
}

// sampleSpans are spans of every shape the encoder writes: SDK spans
// (remote and local parents, events, links, statuses, each kind of
// attribute value) and snapshots under two scopes and two resources.
func sampleSpans(t testing.TB) []sdktrace.ReadOnlySpan {
	rec := tracetest.NewSpanRecorder()
	res := resource.NewSchemaless(attribute.String("service.name", "docket"), attribute.Int("n", 7))
	tp, err := NewProvider(rec, res)
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Shutdown(context.Background())
	tr := tp.Tracer("docket", trace.WithInstrumentationVersion("1.2.3"), trace.WithSchemaURL("https://opentelemetry.io/schemas/1.26.0"))
	other := tp.Tracer("workflow", trace.WithInstrumentationAttributes(attribute.Bool("user", true)))

	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	ts, _ := trace.ParseTraceState("vendor=a,other=b")
	remote := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{1, 2, 3, 4, 5, 6, 7, 8},
		TraceFlags: trace.FlagsSampled, TraceState: ts, Remote: true})
	start := time.Unix(1_700_000_000, 123_456_789)
	ctx := trace.ContextWithRemoteSpanContext(context.Background(), remote)
	ctx, a := tr.Start(ctx, "docket.run", trace.WithTimestamp(start), trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(
			attribute.String("s", "text"), attribute.String("empty", ""), attribute.Int("i", -42), attribute.Int64("big", 1<<62),
			attribute.Float64("f", 3.25), attribute.Bool("t", true), attribute.Bool("false", false),
			attribute.StringSlice("ss", []string{"a", "", "c"}), attribute.IntSlice("is", []int{1, -2}),
			attribute.Float64Slice("fs", []float64{0.5}), attribute.BoolSlice("bs", []bool{false, true}),
		),
		trace.WithLinks(trace.Link{SpanContext: remote, Attributes: []attribute.KeyValue{attribute.String("l", "x")}}))
	a.AddEvent("evt", trace.WithTimestamp(start.Add(time.Millisecond)), trace.WithAttributes(attribute.Int("e", 1)))
	a.SetStatus(codes.Error, "it broke")
	_, b := other.Start(ctx, "handler.own", trace.WithSpanKind(trace.SpanKindInternal))
	b.SetStatus(codes.Ok, "")
	b.End(trace.WithTimestamp(start.Add(2 * time.Millisecond)))
	_, c := tr.Start(context.Background(), "POST /v1/tasks", trace.WithSpanKind(trace.SpanKindServer), trace.WithNewRoot())
	c.End(trace.WithTimestamp(start.Add(3 * time.Millisecond)))
	a.End(trace.WithTimestamp(start.Add(4 * time.Millisecond)))
	spans := rec.Ended()

	// A second resource, and spans of the first after it.
	stub := tracetest.SpanStub{Name: "stub", SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{9}}),
		StartTime: start, EndTime: start.Add(time.Second), SpanKind: trace.SpanKindProducer,
		Resource: resource.NewSchemaless(attribute.String("service.name", "worker")), InstrumentationScope: instrumentation.Scope{Name: "w"}}
	return append([]sdktrace.ReadOnlySpan{spans[0], stub.Snapshot()}, spans[1:]...)
}

// The encoder's request is the message the official exporter sends for
// the same spans.
func TestEncodeMatchesOfficial(t *testing.T) {
	spans := sampleSpans(t)
	srv := newCaptureServer(t)
	exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(srv.URL+"/v1/traces"))
	if err != nil {
		t.Fatal(err)
	}
	if err := exp.ExportSpans(context.Background(), spans); err != nil {
		t.Fatal(err)
	}
	if err := exp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	official := srv.requests(t)
	if len(official) != 1 {
		t.Fatalf("official exporter sent %d requests", len(official))
	}
	var e encoder
	for round := range 2 { // the second reuses the buffers
		var got coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(e.encode(spans), &got); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		want := official[0]
		// The official exporter orders resources by map iteration.
		if len(got.ResourceSpans) != 2 || len(want.ResourceSpans) != 2 {
			t.Fatalf("resources: got %d, want %d", len(got.ResourceSpans), len(want.ResourceSpans))
		}
		if !proto.Equal(got.ResourceSpans[0].Resource, want.ResourceSpans[0].Resource) {
			want.ResourceSpans[0], want.ResourceSpans[1] = want.ResourceSpans[1], want.ResourceSpans[0]
		}
		// It also leaves out a link's trace state, which the proto has.
		for _, rs := range want.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, sp := range ss.Spans {
					for _, l := range sp.Links {
						l.TraceState = "vendor=a,other=b"
					}
				}
			}
		}
		if !proto.Equal(&got, want) {
			t.Fatalf("round %d: the encoder's request differs from the official one:\n got %v\nwant %v", round, &got, want)
		}
	}
	if n := countSpans(official[0]); n != len(spans) {
		t.Fatalf("%d spans in the request, want %d", n, len(spans))
	}
}

func countSpans(req *coltracepb.ExportTraceServiceRequest) int {
	n := 0
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			n += len(ss.GetSpans())
		}
	}
	return n
}

// BenchmarkExport compares the official OTLP/HTTP exporter with Docket's,
// a batch of 512 spans shaped like docket.finish a request, to a local
// receiver that discards them; encode is Docket's encoding alone.
func BenchmarkExport(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer srv.Close()
	res, _ := Resource(context.Background(), "bench")
	spans := make([]sdktrace.ReadOnlySpan, 512)
	now := time.Now()
	for i := range spans {
		sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1, byte(i)}, SpanID: trace.SpanID{2, byte(i)}, TraceFlags: 1})
		spans[i] = tracetest.SpanStub{Name: "docket.finish", SpanContext: sc, Parent: sc, StartTime: now, EndTime: now.Add(time.Millisecond),
			Attributes: []attribute.KeyValue{attribute.String("docket.task.id", "0193b1e2-7f7e-7b3c-9f6a-0123456789ab"),
				attribute.Int("docket.attempt", 1), attribute.String("docket.outcome", "succeed"), attribute.String("docket.state", "succeeded")},
			Resource: res, InstrumentationScope: instrumentation.Scope{Name: "github.com/docket-dev/docket"}}.Snapshot()
	}
	official, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(srv.URL+"/v1/traces"))
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		exp  sdktrace.SpanExporter
	}{{"official", official}, {"docket", newHTTPExporter(httpConfig{url: srv.URL + "/v1/traces", timeout: 10 * time.Second,
		retryMin: time.Second, retryMax: time.Second, retryFor: time.Second})}} {
		b.Cleanup(func() { _ = c.exp.Shutdown(context.Background()) })
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := c.exp.ExportSpans(context.Background(), spans); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(spans)), "ns/span")
		})
	}
	b.Run("encode", func(b *testing.B) {
		var e encoder
		b.ReportAllocs()
		for b.Loop() {
			if len(e.encode(spans)) == 0 {
				b.Fatal("empty")
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(spans)), "ns/span")
	})
}
