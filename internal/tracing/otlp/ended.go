package otlp

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/docket-dev/docket/internal/tracing"
)

// endedWriter writes ended spans (tracing.EndedSpan) straight to the
// provider's span processor, as read-only spans it builds a batch at a
// time: the SDK's way, a span started and ended through the API, makes a
// recording span, its snapshot and their contexts and options, about a
// dozen objects and 1.5 KB a span, which at two such spans a task was a
// third of what tracing cost a burn-down (see BENCHMARKS.md). It decides
// as the provider would: the same sampler, span limits, ID generator,
// resource and scope, and the processor's OnEnd (OnStart is not called:
// the span is already over).
type endedWriter struct {
	proc    sdktrace.SpanProcessor
	sampler sdktrace.Sampler
	limits  sdktrace.SpanLimits
	res     *resource.Resource
	scope   instrumentation.Scope
	ids     *idGenerator
}

func (w *endedWriter) WriteSpans(spans []tracing.EndedSpan) {
	out := make([]endedSpan, len(spans)) // one object for the batch
	for i := range spans {
		s := &spans[i]
		o := &out[i]
		ctx := context.Background()
		tid := s.Parent.TraceID()
		if s.Parent.IsValid() {
			ctx = trace.ContextWithRemoteSpanContext(ctx, s.Parent)
			o.parent = s.Parent
		} else {
			tid, _ = w.ids.NewIDs(ctx)
		}
		var links []trace.Link
		if s.Link.IsValid() {
			links = []trace.Link{{SpanContext: s.Link}}
		}
		res := w.sampler.ShouldSample(sdktrace.SamplingParameters{ParentContext: ctx, TraceID: tid, Name: s.Name,
			Kind: s.Kind, Attributes: s.Attrs, Links: links})
		if res.Decision != sdktrace.RecordAndSample {
			continue // the provider's batch processor exports sampled spans only
		}
		o.sc = trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: w.ids.NewSpanID(ctx, tid),
			TraceFlags: s.Parent.TraceFlags() | trace.FlagsSampled, TraceState: res.Tracestate})
		o.name, o.kind, o.start, o.end, o.w = s.Name, trace.ValidateSpanKind(s.Kind), s.Start, s.End, w
		attrs := s.Attrs
		if len(res.Attributes) > 0 {
			attrs = append(slices.Clip(attrs), res.Attributes...)
		}
		o.attrs, o.droppedAttrs = w.limit(attrs)
		if len(links) > 0 {
			if w.limits.LinkCountLimit == 0 {
				o.droppedLinks = 1
			} else {
				o.links = []sdktrace.Link{{SpanContext: s.Link}}
			}
		}
		w.proc.OnEnd(o)
	}
}

// limit applies the span limits to attributes: the count, then each
// string's length in characters.
func (w *endedWriter) limit(attrs []attribute.KeyValue) ([]attribute.KeyValue, int) {
	dropped := 0
	if n := w.limits.AttributeCountLimit; n >= 0 && len(attrs) > n {
		attrs, dropped = attrs[:n], len(attrs)-n
	}
	if n := w.limits.AttributeValueLengthLimit; n >= 0 {
		for i, kv := range attrs {
			if v := kv.Value.AsString(); kv.Value.Type() == attribute.STRING && utf8.RuneCountInString(v) > n {
				cut := 0
				for range n {
					_, size := utf8.DecodeRuneInString(v[cut:])
					cut += size
				}
				attrs[i] = kv.Key.String(v[:cut])
			}
		}
	}
	return attrs, dropped
}

// endedSpan is an ended span as the SDK's processors and exporters read
// it. Embedding the interface gives it the SDK's unexported method (as
// the SDK's own tracetest snapshots do); every exported method is its own.
type endedSpan struct {
	sdktrace.ReadOnlySpan

	w            *endedWriter
	name         string
	sc, parent   trace.SpanContext
	kind         trace.SpanKind
	start, end   time.Time
	attrs        []attribute.KeyValue
	links        []sdktrace.Link
	droppedAttrs int
	droppedLinks int
}

func (s *endedSpan) Name() string                                { return s.name }
func (s *endedSpan) SpanContext() trace.SpanContext              { return s.sc }
func (s *endedSpan) Parent() trace.SpanContext                   { return s.parent }
func (s *endedSpan) SpanKind() trace.SpanKind                    { return s.kind }
func (s *endedSpan) StartTime() time.Time                        { return s.start }
func (s *endedSpan) EndTime() time.Time                          { return s.end }
func (s *endedSpan) Attributes() []attribute.KeyValue            { return s.attrs }
func (s *endedSpan) Links() []sdktrace.Link                      { return s.links }
func (s *endedSpan) Events() []sdktrace.Event                    { return nil }
func (s *endedSpan) Status() sdktrace.Status                     { return sdktrace.Status{} }
func (s *endedSpan) InstrumentationScope() instrumentation.Scope { return s.w.scope }
func (s *endedSpan) Resource() *resource.Resource                { return s.w.res }
func (s *endedSpan) DroppedAttributes() int                      { return s.droppedAttrs }
func (s *endedSpan) DroppedLinks() int                           { return s.droppedLinks }
func (s *endedSpan) DroppedEvents() int                          { return 0 }
func (s *endedSpan) ChildSpanCount() int                         { return 0 }

//nolint:staticcheck // part of the interface
func (s *endedSpan) InstrumentationLibrary() instrumentation.Library { return s.w.scope }

// samplerFromEnv is the sampler OTEL_TRACES_SAMPLER and
// OTEL_TRACES_SAMPLER_ARG name, as the SDK reads them (parentbased_always_on
// when unset), except that a value it does not know is an error here
// rather than a logged fallback.
func samplerFromEnv(getenv func(string) string) (sdktrace.Sampler, error) {
	name := strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER")))
	arg := strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER_ARG"))
	ratio := func() (sdktrace.Sampler, error) {
		if arg == "" {
			return sdktrace.TraceIDRatioBased(1), nil
		}
		v, err := strconv.ParseFloat(arg, 64)
		if err != nil || v < 0 || v > 1 {
			return nil, fmt.Errorf("tracing: OTEL_TRACES_SAMPLER_ARG %q is not a ratio between 0 and 1", arg)
		}
		return sdktrace.TraceIDRatioBased(v), nil
	}
	switch name {
	case "", "parentbased_always_on":
		return sdktrace.ParentBased(sdktrace.AlwaysSample()), nil
	case "always_on":
		return sdktrace.AlwaysSample(), nil
	case "always_off":
		return sdktrace.NeverSample(), nil
	case "traceidratio":
		return ratio()
	case "parentbased_always_off":
		return sdktrace.ParentBased(sdktrace.NeverSample()), nil
	case "parentbased_traceidratio":
		r, err := ratio()
		if err != nil {
			return nil, err
		}
		return sdktrace.ParentBased(r), nil
	}
	return nil, fmt.Errorf("tracing: OTEL_TRACES_SAMPLER %q is not supported", name)
}
