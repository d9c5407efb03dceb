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

// SpanWriter writes ended spans. WriteSpans may keep the spans and their
// attribute slices until they are exported: the caller does not reuse them.
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

// SpanStarter starts a span under a remote parent: a task's in-process
// run, whose context the workflow's own spans join.
type SpanStarter interface {
	StartSpan(ctx context.Context, name string, parent trace.SpanContext) (context.Context, trace.Span)
}

// StarterFor returns tp itself when it is a SpanStarter (the providers
// package tracing/otlp builds record such a span themselves, at a
// fraction of the SDK's cost, until it is asked for more than Docket
// asks), otherwise one that starts spans with tp's tracer.
func StarterFor(tp trace.TracerProvider) SpanStarter {
	if s, ok := tp.(SpanStarter); ok {
		return s
	}
	return tracerStarter{Tracer(tp)}
}

type tracerStarter struct{ tracer trace.Tracer }

func (s tracerStarter) StartSpan(ctx context.Context, name string, parent trace.SpanContext) (context.Context, trace.Span) {
	return s.tracer.Start(trace.ContextWithRemoteSpanContext(ctx, parent), name)
}
