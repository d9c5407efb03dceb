package queue

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/metrics"
	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/tracing"
)

// spans writes the queue's spans (see package tracing): admission, each
// admitted task's docket.task, the wait in the queue, in-process runs and
// fenced finishes. With tracing off (Config.TracerProvider nil or no-op)
// every method returns at once, having built nothing.
type spans struct {
	on     bool
	tracer trace.Tracer
}

func newSpans(tp trace.TracerProvider) spans {
	return spans{on: tracing.Enabled(tp), tracer: tracing.Tracer(tp)}
}

// taskAttrs are the attributes of a task's docket.task span. Its later
// spans, one or more per attempt, carry only the task ID and the attempt
// (and what is theirs): each attribute costs on every span exported, and
// the task's span, their parent, has the rest.
func taskAttrs(t *dockettype.Task) []attribute.KeyValue {
	return []attribute.KeyValue{
		tracing.AttrTaskID.String(t.ID),
		tracing.AttrTenant.String(t.Tenant),
		tracing.AttrWorkflow.String(t.Workflow),
		tracing.AttrPool.String(string(t.Pool)),
	}
}

// startAdmit starts a submission's admission span (its wait for the group
// commit). end records how it went: the group size, or the store failure.
func (s spans) startAdmit(ctx context.Context, items int) (context.Context, trace.Span) {
	if !s.on {
		return ctx, nil
	}
	return s.tracer.Start(ctx, tracing.SpanAdmit, trace.WithAttributes(tracing.AttrItems.Int(items)))
}

// endAdmit ends the admission span and writes each admitted task's
// docket.task span, the parent of its later spans (see package tracing).
func (s spans) endAdmit(ctx context.Context, span trace.Span, start time.Time, items []*store.AdmitItem,
	res []store.AdmitResult, batch int, err error) {
	if span == nil {
		return
	}
	defer span.End()
	if err != nil {
		span.SetStatus(codes.Error, "")
		span.SetAttributes(tracing.AttrCode.String(string(dockettype.CodeStoreUnavailable)))
		return
	}
	span.SetAttributes(tracing.AttrBatch.Int(batch))
	parent := trace.SpanContextFromContext(ctx)
	for i, r := range res {
		if r.Outcome != store.Admitted || r.Task == nil || items[i].TraceUnsampled {
			continue // an unsampled trace's task has no span recorded (nor do its later ones)
		}
		tid, terr := trace.TraceIDFromHex(items[i].TraceID)
		if terr != nil {
			continue
		}
		tctx, opts := ctx, []trace.SpanStartOption{trace.WithTimestamp(start),
			trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(taskAttrs(r.Task)...)}
		if !parent.IsValid() || parent.TraceID() != tid {
			// Not under this admission span: a root span of the task's
			// own trace, linked to the admission.
			opts = append(opts, trace.WithNewRoot())
			if parent.IsValid() {
				opts = append(opts, trace.WithLinks(trace.Link{SpanContext: parent}))
			}
		}
		tctx = tracing.WithIDs(tctx, tid, tracing.TaskSpanID(r.Task.ID))
		_, ts := s.tracer.Start(tctx, tracing.SpanTask, opts...)
		ts.End()
	}
}

// queueWait writes the span of a first attempt's wait in the queue, from
// its admission to now, when it was claimed.
func (s spans) queueWait(c *store.ClaimedTask, now time.Time, remote bool) {
	t := c.Task
	if !s.on || t.Attempt != 1 {
		return
	}
	ctx := tracing.InTask(context.Background(), t.TraceID, t.ID, !c.TraceUnsampled)
	attrs := []attribute.KeyValue{tracing.AttrTaskID.String(t.ID), tracing.AttrAttempt.Int(t.Attempt)}
	if remote {
		attrs = append(attrs, tracing.AttrRemote.Bool(true))
	}
	_, span := s.tracer.Start(ctx, tracing.SpanQueueWait, trace.WithTimestamp(t.CreatedAt),
		trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(attrs...))
	span.End(trace.WithTimestamp(now))
}

// startRun starts an in-process attempt's span, under the task's span; ctx
// carries it to the workflow, whose own spans are its children.
func (s spans) startRun(ctx context.Context, c *store.ClaimedTask) (context.Context, trace.Span) {
	if !s.on {
		return ctx, nil
	}
	t := c.Task
	sc := tracing.TaskSpanContext(t.TraceID, t.ID, !c.TraceUnsampled)
	if !sc.IsValid() {
		return ctx, nil
	}
	return s.tracer.Start(trace.ContextWithRemoteSpanContext(ctx, sc), tracing.SpanRun,
		trace.WithAttributes(tracing.AttrTaskID.String(t.ID), tracing.AttrAttempt.Int(t.Attempt)))
}

// endRun ends an attempt's span with what the worker decided.
func endRun(span trace.Span, item *store.FinishItem, stopped bool) {
	if span == nil {
		return
	}
	switch {
	case stopped:
		span.SetAttributes(tracing.AttrOutcome.String("stopped"))
	case item.Code != "":
		span.SetAttributes(tracing.AttrOutcome.String(outcomeName(item.Kind)), tracing.AttrCode.String(metrics.CodeLabel(item.Code)))
	default:
		span.SetAttributes(tracing.AttrOutcome.String(outcomeName(item.Kind)))
	}
	if !stopped && (item.Kind == store.FinishFail || item.Kind == store.FinishRetry) {
		span.SetStatus(codes.Error, "")
	}
	span.End()
}

// finish writes the span of one fenced outcome write, from when the
// outcome was handed over (start) to now. link is the span of the request
// that carried it, for remote outcomes.
func (s spans) finish(task finishTask, item *store.FinishItem, start, now time.Time, applied bool,
	state dockettype.State, link trace.SpanContext) {
	if !s.on {
		return
	}
	ctx := tracing.InTask(context.Background(), task.traceID, item.TaskID, !task.unsampled)
	attrs := make([]attribute.KeyValue, 0, 5)
	attrs = append(attrs, tracing.AttrTaskID.String(item.TaskID), tracing.AttrAttempt.Int(task.attempt),
		tracing.AttrOutcome.String(outcomeName(item.Kind)))
	switch {
	case !applied:
		attrs = append(attrs, tracing.AttrFenced.Bool(true), tracing.AttrCode.String(string(dockettype.CodeStaleLease)))
	case item.Code != "":
		attrs = append(attrs, tracing.AttrCode.String(metrics.CodeLabel(item.Code)))
	}
	if applied && state != "" {
		attrs = append(attrs, tracing.AttrState.String(string(state)))
	}
	opts := []trace.SpanStartOption{trace.WithTimestamp(start), trace.WithAttributes(attrs...)}
	if link.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: link}))
	}
	_, span := s.tracer.Start(ctx, tracing.SpanFinish, opts...)
	span.End(trace.WithTimestamp(now))
}

// finishTask is what a finish span needs of its task beyond the item.
type finishTask struct {
	traceID   string
	attempt   int
	unsampled bool // the task's trace is not sampled
}

// outcomeName is a finish kind as a span attribute.
func outcomeName(k store.FinishKind) string {
	switch k {
	case store.FinishSucceed:
		return "succeed"
	case store.FinishRetry:
		return "retry"
	case store.FinishFail:
		return "fail"
	case store.FinishRelease:
		return "release"
	}
	return "other"
}
