package otlp

import (
	"context"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"

	"github.com/docket-dev/docket/internal/tracing"
)

// StartSpan starts a span under a remote parent (tracing.SpanStarter):
// a task's in-process run. What Docket does with it (attributes, a status,
// End) it records itself and writes ended, as WriteSpans does; the first
// call that asks for more (an event, an error, a link, a new name, an
// attribute set twice) starts the SDK's own span in its place, with the
// same IDs, start and what was recorded, and hands it every call after.
// A span the sampler drops is the SDK's from the start.
func (p *Provider) StartSpan(ctx context.Context, name string, parent trace.SpanContext) (context.Context, trace.Span) {
	if !p.Enabled() {
		return ctx, trace.SpanFromContext(ctx)
	}
	sdkSpan := func() (context.Context, trace.Span) {
		return p.sdk.Tracer(tracing.Scope).Start(trace.ContextWithRemoteSpanContext(ctx, parent), name)
	}
	if !parent.IsValid() {
		return sdkSpan()
	}
	sc, extra, ok := p.ended.decide(parent, name, trace.SpanKindInternal, nil, nil)
	if !ok {
		return sdkSpan()
	}
	s := &liveSpan{p: p, sc: sc, ended: tracing.EndedSpan{Name: name, Parent: parent, Kind: trace.SpanKindInternal,
		Start: time.Now(), Attrs: slices.Clip(extra)}}
	return trace.ContextWithSpan(ctx, s), s
}

// liveSpan is a span StartSpan started (see there).
type liveSpan struct {
	embedded.Span

	p  *Provider
	sc trace.SpanContext

	mu     sync.Mutex
	ended  tracing.EndedSpan // what is recorded; End is set when it ends
	done   bool
	status sdktrace.Status
	sdk    trace.Span // the SDK's span, once one was needed
}

var _ trace.Span = (*liveSpan)(nil)

// upgrade returns the SDK's span that stands for s from now on, starting
// it if need be; nil once s has ended. It is called with s.mu held.
func (s *liveSpan) upgrade() trace.Span {
	if s.sdk != nil || s.done {
		return s.sdk
	}
	ctx := trace.ContextWithRemoteSpanContext(context.Background(), s.ended.Parent)
	ctx = tracing.WithIDs(ctx, s.sc.TraceID(), s.sc.SpanID())
	_, s.sdk = s.p.sdk.Tracer(tracing.Scope).Start(ctx, s.ended.Name, trace.WithTimestamp(s.ended.Start),
		trace.WithAttributes(s.ended.Attrs...))
	if s.status.Code != codes.Unset {
		s.sdk.SetStatus(s.status.Code, s.status.Description)
	}
	return s.sdk
}

func (s *liveSpan) SpanContext() trace.SpanContext       { return s.sc }
func (s *liveSpan) TracerProvider() trace.TracerProvider { return s.p }

func (s *liveSpan) IsRecording() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sdk != nil {
		return s.sdk.IsRecording()
	}
	return !s.done
}

func (s *liveSpan) SetAttributes(kv ...attribute.KeyValue) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sdk == nil && !s.done && newKeys(s.ended.Attrs, kv) {
		s.ended.Attrs = append(s.ended.Attrs, kv...)
		return
	}
	if sdk := s.upgrade(); sdk != nil {
		sdk.SetAttributes(kv...)
	}
}

// newKeys reports whether kv are valid, their keys new to have and to
// each other: the SDK would then keep them all as they are.
func newKeys(have, kv []attribute.KeyValue) bool {
	for i, a := range kv {
		if !a.Valid() {
			return false
		}
		for _, b := range have {
			if a.Key == b.Key {
				return false
			}
		}
		for _, b := range kv[:i] {
			if a.Key == b.Key {
				return false
			}
		}
	}
	return true
}

// SetStatus as the SDK's: Ok is final, Error keeps its description, Unset
// changes nothing.
func (s *liveSpan) SetStatus(code codes.Code, description string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.sdk != nil:
		s.sdk.SetStatus(code, description)
	case s.done || s.status.Code > code:
	case code == codes.Error:
		s.status = sdktrace.Status{Code: code, Description: description}
	default:
		s.status = sdktrace.Status{Code: code}
	}
}

func (s *liveSpan) SetName(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sdk := s.upgrade(); sdk != nil {
		sdk.SetName(name)
	}
}

func (s *liveSpan) AddEvent(name string, opts ...trace.EventOption) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sdk := s.upgrade(); sdk != nil {
		sdk.AddEvent(name, opts...)
	}
}

func (s *liveSpan) AddLink(link trace.Link) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sdk := s.upgrade(); sdk != nil {
		sdk.AddLink(link)
	}
}

func (s *liveSpan) RecordError(err error, opts ...trace.EventOption) {
	if err == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if sdk := s.upgrade(); sdk != nil {
		sdk.RecordError(err, opts...)
	}
}

// End writes the span (or ends the SDK's); only the first call counts.
func (s *liveSpan) End(opts ...trace.SpanEndOption) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sdk != nil {
		s.sdk.End(opts...)
		return
	}
	if s.done {
		return
	}
	cfg := trace.NewSpanEndConfig(opts...)
	if cfg.StackTrace() {
		s.upgrade().End(opts...) // the SDK records the stack
		return
	}
	s.done = true
	s.ended.End = cfg.Timestamp()
	if s.ended.End.IsZero() {
		s.ended.End = time.Now()
	}
	w := s.p.ended
	o := &endedSpan{s: &s.ended, w: w, sc: s.sc, status: s.status}
	o.attrs, o.droppedAttrs = w.limit(s.ended.Attrs)
	w.proc.OnEnd(o)
}
