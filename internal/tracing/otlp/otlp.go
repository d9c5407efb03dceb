// Package otlp sets up OpenTelemetry tracing from the standard OTEL_*
// environment variables, with the official Go SDK: spans are exported
// with OTLP when OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set, and tracing is off (the
// API's no-op provider) otherwise. The exporter's protocol is
// OTEL_EXPORTER_OTLP_TRACES_PROTOCOL or OTEL_EXPORTER_OTLP_PROTOCOL:
// http/protobuf (the default: Docket's exporter, exporter.go, which reads
// the headers, timeout, compression and TLS variables as the official one
// does) or grpc (the official exporter). The sampler is read here as the
// SDK reads it, so that the spans Docket records itself (ended.go,
// live.go) are sampled alike; the span limits, the batch processor's
// variables and the resource are the SDK's own handling of them.
package otlp

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/docket-dev/docket/internal/tracing"
)

// Provider is the node's tracer provider and how to flush and stop it.
// It also writes ended spans (tracing.SpanWriter) and starts in-process
// runs' spans (tracing.SpanStarter), recording them itself.
type Provider struct {
	trace.TracerProvider
	sdk   *sdktrace.TracerProvider // nil when tracing is off
	ended *endedWriter
}

// Enabled reports whether spans are exported.
func (p *Provider) Enabled() bool { return p != nil && p.sdk != nil }

// WriteSpans writes ended spans (tracing.SpanWriter); nothing when off.
func (p *Provider) WriteSpans(spans []tracing.EndedSpan) {
	if p.Enabled() {
		p.ended.WriteSpans(spans)
	}
}

// NewProvider is a provider whose spans, started through its tracers or
// written ended, go to proc. Its sampler is the one OTEL_TRACES_SAMPLER
// names, its span limits those of the OTEL_SPAN_* variables; res nil is
// the SDK's default resource. Tests build theirs with it, over an
// in-memory processor.
func NewProvider(proc sdktrace.SpanProcessor, res *resource.Resource) (*Provider, error) {
	sampler, parentBased, err := samplerFromEnv(os.Getenv)
	if err != nil {
		return nil, err
	}
	if res == nil {
		res = resource.Default()
	}
	// As the SDK does with a resource it is given, for the spans written
	// ended to carry the same.
	if res, err = resource.Merge(resource.Environment(), res); err != nil {
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	ids, limits := &idGenerator{}, sdktrace.NewSpanLimits()
	sdk := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(proc), sdktrace.WithResource(res),
		sdktrace.WithSampler(sampler), sdktrace.WithRawSpanLimits(limits), sdktrace.WithIDGenerator(ids))
	return &Provider{TracerProvider: sdk, sdk: sdk, ended: &endedWriter{proc: proc, sampler: sampler, parentBased: parentBased, limits: limits,
		res: res, scope: instrumentation.Scope{Name: tracing.Scope}, ids: ids}}, nil
}

// Shutdown exports what is buffered and stops the exporter, within ctx. It
// does nothing when tracing is off (or p is nil).
func (p *Provider) Shutdown(ctx context.Context) error {
	if p == nil || p.sdk == nil {
		return nil
	}
	return p.sdk.Shutdown(ctx)
}

// Configured reports whether the environment asks for traces: an OTLP
// endpoint is set, the SDK is not disabled (OTEL_SDK_DISABLED=true) and
// the exporter is not "none" (OTEL_TRACES_EXPORTER).
func Configured(getenv func(string) string) bool {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	switch strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")) {
	case "", "otlp":
	default:
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// FromEnv returns the provider the environment asks for: a batching OTLP
// exporter when Configured, the no-op provider otherwise. version is the
// service.version resource attribute; service.name is "docket" unless
// OTEL_SERVICE_NAME (or OTEL_RESOURCE_ATTRIBUTES) names another.
func FromEnv(ctx context.Context, version string) (*Provider, error) {
	if !Configured(os.Getenv) {
		return &Provider{TracerProvider: noop.NewTracerProvider()}, nil
	}
	var (
		exp sdktrace.SpanExporter
		err error
	)
	switch protocol() {
	case "grpc":
		exp, err = otlptracegrpc.New(ctx)
	case "http/protobuf":
		var cfg httpConfig
		if cfg, err = httpConfigFromEnv(os.Getenv, os.ReadFile); err == nil {
			exp = newHTTPExporter(cfg)
		}
	default:
		return nil, fmt.Errorf("tracing: OTLP protocol %q is not supported (http/protobuf or grpc)", protocol())
	}
	if err != nil {
		return nil, fmt.Errorf("tracing: OTLP exporter: %w", err)
	}
	res, err := Resource(ctx, version)
	if err != nil {
		_ = exp.Shutdown(ctx)
		return nil, err
	}
	p, err := NewProvider(sdktrace.NewBatchSpanProcessor(exp, batchOptions(os.Getenv)...), res)
	if err != nil {
		_ = exp.Shutdown(ctx)
		return nil, err
	}
	return p, nil
}

// Docket's batch span processor queue and export batch, unless
// OTEL_BSP_MAX_QUEUE_SIZE and OTEL_BSP_MAX_EXPORT_BATCH_SIZE say: larger
// than the SDK's 2,048 and 512, because a claim or a finish write ends up
// to a thousand spans at once, and at 35,000 tasks a second the SDK's
// queue dropped 1–4 % of them (BENCHMARKS.md). The queue holds that many
// ended spans, a few megabytes.
const (
	batchQueue  = 16384
	batchExport = 2048
)

// batchOptions are the processor's options for what the variables leave
// unset.
func batchOptions(getenv func(string) string) []sdktrace.BatchSpanProcessorOption {
	var opts []sdktrace.BatchSpanProcessorOption
	if strings.TrimSpace(getenv("OTEL_BSP_MAX_QUEUE_SIZE")) == "" {
		opts = append(opts, sdktrace.WithMaxQueueSize(batchQueue))
	}
	if strings.TrimSpace(getenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE")) == "" {
		opts = append(opts, sdktrace.WithMaxExportBatchSize(batchExport))
	}
	return opts
}

func protocol() string {
	if p := strings.TrimSpace(os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")); p != "" {
		return p
	}
	if p := strings.TrimSpace(os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")); p != "" {
		return p
	}
	return "http/protobuf"
}

// Resource describes this process: service.name "docket" and
// service.version, then what OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES
// say (they win), and the SDK's own attributes.
func Resource(ctx context.Context, version string) (*resource.Resource, error) {
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "docket"), attribute.String("service.version", version)),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	return res, nil
}

// idGenerator makes random IDs, except a span ID asked for with
// tracing.WithIDs.
type idGenerator struct{}

func (g *idGenerator) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if tid, sid, ok := tracing.IDsFrom(ctx); ok {
		return tid, sid
	}
	var tid trace.TraceID
	for !tid.IsValid() {
		putUint64(tid[:8], rand.Uint64())
		putUint64(tid[8:], rand.Uint64())
	}
	return tid, g.NewSpanID(ctx, tid)
}

func (g *idGenerator) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	if _, sid, ok := tracing.IDsFrom(ctx); ok {
		return sid
	}
	var sid trace.SpanID
	for !sid.IsValid() {
		putUint64(sid[:], rand.Uint64())
	}
	return sid
}

func putUint64(b []byte, v uint64) {
	for i := range 8 {
		b[i] = byte(v >> (56 - 8*i))
	}
}
