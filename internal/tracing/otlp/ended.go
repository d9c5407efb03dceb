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
	proc        sdktrace.SpanProcessor
	sampler     sdktrace.Sampler
	parentBased bool // sampler is a ParentBased one (see samplerFromEnv)
	limits      sdktrace.SpanLimits
	res         *resource.Resource
	scope       instrumentation.Scope
	ids         *idGenerator
}

func (w *endedWriter) WriteSpans(spans []tracing.EndedSpan) {
	out := make([]endedSpan, len(spans)) // one object for the batch
	for i := range spans {
		s := &spans[i]
		var links []trace.Link
		if s.Link.IsValid() {
			links = []trace.Link{{SpanContext: s.Link}}
		}
		sc, extra, ok := w.decide(s.Parent, s.Name, s.Kind, s.Attrs, links)
		if !ok {
			continue // the provider's batch processor exports sampled spans only
		}
		o := &out[i]
		o.s, o.w, o.sc = s, w, sc
		attrs := s.Attrs
		if len(extra) > 0 {
			attrs = append(slices.Clip(attrs), extra...)
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

// decide is the sampler's decision for a span under parent (a new trace
// when parent is invalid): its span context, with a new span ID, and the
// attributes the sampler adds; ok is false when the span is not sampled.
func (w *endedWriter) decide(parent trace.SpanContext, name string, kind trace.SpanKind, attrs []attribute.KeyValue,
	links []trace.Link) (sc trace.SpanContext, extra []attribute.KeyValue, ok bool) {
	tid, ts := parent.TraceID(), parent.TraceState()
	if parent.IsValid() && parent.IsRemote() && w.parentBased {
		// A parent-based sampler follows a remote parent's flag and keeps
		// its trace state (its default remote-parent samplers, the only
		// ones the OTEL_TRACES_SAMPLER values give it).
		if !parent.IsSampled() {
			return sc, nil, false
		}
	} else {
		ctx := context.Background()
		if parent.IsValid() {
			ctx = trace.ContextWithRemoteSpanContext(ctx, parent)
		} else {
			tid, _ = w.ids.NewIDs(ctx)
		}
		res := w.sampler.ShouldSample(sdktrace.SamplingParameters{ParentContext: ctx, TraceID: tid, Name: name,
			Kind: kind, Attributes: attrs, Links: links})
		if res.Decision != sdktrace.RecordAndSample {
			return sc, nil, false
		}
		ts, extra = res.Tracestate, res.Attributes
	}
	sc = trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: w.ids.NewSpanID(context.Background(), tid),
		TraceFlags: parent.TraceFlags() | trace.FlagsSampled, TraceState: ts})
	return sc, extra, true
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

	s            *tracing.EndedSpan // the span as written
	w            *endedWriter
	sc           trace.SpanContext
	attrs        []attribute.KeyValue
	links        []sdktrace.Link
	status       sdktrace.Status
	droppedAttrs int
	droppedLinks int
}

func (s *endedSpan) Name() string                                { return s.s.Name }
func (s *endedSpan) SpanContext() trace.SpanContext              { return s.sc }
func (s *endedSpan) Parent() trace.SpanContext                   { return s.s.Parent }
func (s *endedSpan) SpanKind() trace.SpanKind                    { return trace.ValidateSpanKind(s.s.Kind) }
func (s *endedSpan) StartTime() time.Time                        { return s.s.Start }
func (s *endedSpan) EndTime() time.Time                          { return s.s.End }
func (s *endedSpan) Attributes() []attribute.KeyValue            { return s.attrs }
func (s *endedSpan) Links() []sdktrace.Link                      { return s.links }
func (s *endedSpan) Events() []sdktrace.Event                    { return nil }
func (s *endedSpan) Status() sdktrace.Status                     { return s.status }
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
// rather than a logged fallback. parentBased says it is one of the
// parentbased_ samplers, whose remote-parent samplers are the defaults.
func samplerFromEnv(getenv func(string) string) (s sdktrace.Sampler, parentBased bool, err error) {
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
		return sdktrace.ParentBased(sdktrace.AlwaysSample()), true, nil
	case "always_on":
		return sdktrace.AlwaysSample(), false, nil
	case "always_off":
		return sdktrace.NeverSample(), false, nil
	case "traceidratio":
		r, err := ratio()
		return r, false, err
	case "parentbased_always_off":
		return sdktrace.ParentBased(sdktrace.NeverSample()), true, nil
	case "parentbased_traceidratio":
		r, err := ratio()
		if err != nil {
			return nil, false, err
		}
		return sdktrace.ParentBased(r), true, nil
	}
	return nil, false, fmt.Errorf("tracing: OTEL_TRACES_SAMPLER %q is not supported", name)
}
