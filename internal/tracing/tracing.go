// Package tracing holds what Docket's components share about OpenTelemetry
// traces: span names, attribute keys and the task's span context. It
// imports the OpenTelemetry API only (go.opentelemetry.io/otel/trace); the
// SDK, the OTLP exporter and their set-up from the OTEL_* variables live in
// package tracing/otlp, which the node assembles.
//
// A task's trace is the trace ID it was admitted with (the caller's W3C
// traceparent, or one the server made). The spans of its life after the
// admitting request (the wait in the queue, each run, each fenced finish)
// are written on whichever node claims it, possibly after a restart, so
// they cannot have the request's span as parent. They have the task's
// span instead, docket.task, written at admission as a child of the
// admission span: its span ID is derived from the task ID (TaskSpanID), so
// any node knows it from the task row alone.
//
// Attributes hold IDs, the workflow name (registered by an admin), the
// pool, the attempt and failure codes of the closed set: never an input,
// a result, a message or any other text a tenant chose, nor SQL.
package tracing

import (
	"context"
	"encoding/binary"
	"encoding/hex"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Scope is the instrumentation scope of Docket's spans.
const Scope = "github.com/docket-dev/docket"

// Span names. The HTTP server span is named "METHOD route" (the matched
// route pattern, e.g. "POST /v1/tasks").
const (
	SpanAdmit     = "docket.admit"      // one submission's admission: its wait for the group commit
	SpanTask      = "docket.task"       // one admitted task: the parent of its later spans
	SpanQueueWait = "docket.queue.wait" // from admission (or the retry's ready time) to the claim
	SpanRun       = "docket.run"        // one in-process attempt
	SpanFinish    = "docket.finish"     // one fenced outcome write
	SpanWorkerRun = "docket.worker.run" // one remote attempt, in the Go worker SDK
)

// Attribute keys.
const (
	AttrTaskID   = attribute.Key("docket.task.id")
	AttrTenant   = attribute.Key("docket.tenant")
	AttrWorkflow = attribute.Key("docket.workflow")
	AttrPool     = attribute.Key("docket.pool")
	AttrAttempt  = attribute.Key("docket.attempt")
	AttrCode     = attribute.Key("docket.error.code") // a failure code of the closed set
	AttrOutcome  = attribute.Key("docket.outcome")    // succeed, retry, fail, release
	AttrFenced   = attribute.Key("docket.fenced")     // the finish was refused: the lease was no longer current
	AttrItems    = attribute.Key("docket.items")      // items of this submission
	AttrBatch    = attribute.Key("docket.batch")      // items of the group commit it was part of
	AttrRemote   = attribute.Key("docket.remote")     // the attempt runs on a remote worker
	AttrState    = attribute.Key("docket.state")      // the task's state after the write
	AttrReplayed = attribute.Key("docket.replayed")   // the submission replayed an existing task
)

// Enabled reports whether tp records anything: false for nil, for the
// API's no-op provider and for a provider that says it is off (with an
// Enabled method, as package tracing/otlp's does), so that components skip
// building spans entirely.
func Enabled(tp trace.TracerProvider) bool {
	if tp == nil {
		return false
	}
	if e, ok := tp.(interface{ Enabled() bool }); ok {
		return e.Enabled()
	}
	_, isNoop := tp.(noop.TracerProvider)
	return !isNoop
}

// Tracer returns Docket's tracer of tp (a no-op one for nil).
func Tracer(tp trace.TracerProvider) trace.Tracer {
	if tp == nil || !Enabled(tp) {
		tp = noop.NewTracerProvider()
	}
	return tp.Tracer(Scope)
}

// TaskSpanID is the span ID of a task's docket.task span, derived from its
// ID so that every node knows it: the 64-bit FNV-1a hash of the ID (task
// IDs are UUIDs, unique; a span ID need only be unique within its trace).
// It is computed for every span of a task, so it is cheap and allocates
// nothing.
func TaskSpanID(taskID string) trace.SpanID {
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	for i := 0; i < len(taskID); i++ {
		h ^= uint64(taskID[i])
		h *= prime
	}
	if h == 0 {
		h = 1
	}
	var id trace.SpanID
	binary.BigEndian.PutUint64(id[:], h)
	return id
}

// TaskSpanContext is the span context of a task's docket.task span: the
// task's trace, remote (it may have been written on another node), and
// sampled as the task's admitting request was (stored with the task): a
// parent-based sampler then records the task's later spans only for a
// sampled trace. It is invalid when traceID is not a valid W3C trace ID.
func TaskSpanContext(traceID, taskID string, sampled bool) trace.SpanContext {
	tid, err := trace.TraceIDFromHex(traceID)
	if err != nil {
		return trace.SpanContext{}
	}
	var flags trace.TraceFlags
	if sampled {
		flags = trace.FlagsSampled
	}
	return trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: tid, SpanID: TaskSpanID(taskID), TraceFlags: flags, Remote: true,
	})
}

// Traceparent is the W3C traceparent of a task's docket.task span, which
// the worker API hands to remote workers with each claimed attempt: a
// worker's spans of the attempt are its children, in the task's trace.
// Its flags are the trace's sampled flag. It is "" when traceID is not a
// valid trace ID.
func Traceparent(traceID, taskID string, sampled bool) string {
	sc := TaskSpanContext(traceID, taskID, sampled)
	if !sc.IsValid() {
		return ""
	}
	return FormatTraceparent(sc)
}

// FormatTraceparent is sc as a version-00 W3C traceparent.
func FormatTraceparent(sc trace.SpanContext) string {
	var b [55]byte
	copy(b[:], "00-")
	tid, sid := sc.TraceID(), sc.SpanID()
	hex.Encode(b[3:35], tid[:])
	b[35] = '-'
	hex.Encode(b[36:52], sid[:])
	b[52] = '-'
	hex.Encode(b[53:55], []byte{byte(sc.TraceFlags())})
	return string(b[:])
}

type idsKey struct{}

type ids struct {
	trace trace.TraceID
	span  trace.SpanID
}

// WithIDs asks that the next span started from ctx get span ID sid and,
// when it is a root span (trace.WithNewRoot, or no parent), trace ID tid.
// Only providers built by package tracing/otlp honour it (their ID
// generator reads it); docket.task spans are started this way. Start no
// other span from the context returned with such a span.
func WithIDs(ctx context.Context, tid trace.TraceID, sid trace.SpanID) context.Context {
	return context.WithValue(ctx, idsKey{}, ids{tid, sid})
}

// IDsFrom returns the IDs WithIDs asked for.
func IDsFrom(ctx context.Context) (trace.TraceID, trace.SpanID, bool) {
	v, ok := ctx.Value(idsKey{}).(ids)
	return v.trace, v.span, ok && v.trace.IsValid() && v.span.IsValid()
}
