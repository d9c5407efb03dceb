package tracing

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// EndedSpan is a span whose whole life is known when it is written: a
// task's wait in the queue (written at its claim) and a fenced finish
// (written once the outcome is). The queue writes them a batch at a time,
// a claim's or a finish write's, through a SpanWriter.
type EndedSpan struct {
	Name       string
	Parent     trace.SpanContext // the task's span; invalid: the span is the root of a new trace
	Kind       trace.SpanKind
	Start, End time.Time
	Attrs      []attribute.KeyValue // valid, each key once
	Link       trace.SpanContext    // a linked span, when valid
}

// SpanWriter writes ended spans. WriteSpans keeps the spans' attribute
// slices (the caller does not reuse them) and nothing else of spans.
type SpanWriter interface {
	WriteSpans(spans []EndedSpan)
}

// WriterFor returns the writer of ended spans for tp: tp itself when it
// is one (the providers package tracing/otlp builds write them straight
// to their span processor, at a fraction of the SDK's cost for a span
// started and ended through its API), otherwise one that starts and ends
// each through tp's tracer.
func WriterFor(tp trace.TracerProvider) SpanWriter {
	if w, ok := tp.(SpanWriter); ok {
		return w
	}
	return tracerWriter{Tracer(tp)}
}

// tracerWriter writes ended spans through a tracer's API.
type tracerWriter struct{ tracer trace.Tracer }

func (w tracerWriter) WriteSpans(spans []EndedSpan) {
	for i := range spans {
		s := &spans[i]
		ctx := context.Background()
		if s.Parent.IsValid() {
			ctx = trace.ContextWithRemoteSpanContext(ctx, s.Parent)
		}
		opts := []trace.SpanStartOption{trace.WithTimestamp(s.Start), trace.WithSpanKind(s.Kind), trace.WithAttributes(s.Attrs...)}
		if !s.Parent.IsValid() {
			opts = append(opts, trace.WithNewRoot())
		}
		if s.Link.IsValid() {
			opts = append(opts, trace.WithLinks(trace.Link{SpanContext: s.Link}))
		}
		_, span := w.tracer.Start(ctx, s.Name, opts...)
		span.End(trace.WithTimestamp(s.End))
	}
}
