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
	on      bool
	tracer  trace.Tracer
	writer  tracing.SpanWriter  // the wait and finish spans, a batch at a time
	starter tracing.SpanStarter // in-process runs
}

func newSpans(tp trace.TracerProvider) spans {
	return spans{on: tracing.Enabled(tp), tracer: tracing.Tracer(tp), writer: tracing.WriterFor(tp),
		starter: tracing.StarterFor(tp)}
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

// queueWaits writes the spans of first attempts' waits in the queue, from
// their admission to now, when they were claimed: one batch, a claim's.
func (s spans) queueWaits(claimed []*store.ClaimedTask, now time.Time, remote bool) {
	if !s.on {
		return
	}
	b := newEndedBatch(len(claimed), 2)
	for _, c := range claimed {
		t := c.Task
		if t.Attempt != 1 {
			continue
		}
		span := tracing.EndedSpan{Name: tracing.SpanQueueWait, Parent: tracing.TaskSpanContext(t.TraceID, t.ID, !c.TraceUnsampled),
			Kind: trace.SpanKindConsumer, Start: t.CreatedAt, End: now}
		if remote {
			b.add(span, tracing.AttrTaskID.String(t.ID), tracing.AttrAttempt.Int(t.Attempt), tracing.AttrRemote.Bool(true))
		} else {
			b.add(span, tracing.AttrTaskID.String(t.ID), tracing.AttrAttempt.Int(t.Attempt))
		}
	}
	s.write(b)
}

// endedBatch is a batch of ended spans, their attributes in one slice.
type endedBatch struct {
	spans []tracing.EndedSpan
	attrs []attribute.KeyValue
}

// newEndedBatch makes room for n spans of about perSpan attributes.
func newEndedBatch(n, perSpan int) *endedBatch {
	return &endedBatch{spans: make([]tracing.EndedSpan, 0, n), attrs: make([]attribute.KeyValue, 0, n*perSpan)}
}

func (b *endedBatch) add(span tracing.EndedSpan, attrs ...attribute.KeyValue) {
	from := len(b.attrs)
	b.attrs = append(b.attrs, attrs...)
	span.Attrs = b.attrs[from:len(b.attrs):len(b.attrs)]
	b.spans = append(b.spans, span)
}

// write hands the batch to the span writer.
func (s spans) write(b *endedBatch) {
	if len(b.spans) > 0 {
		s.writer.WriteSpans(b.spans)
	}
}

// startRun starts an in-process attempt's span, under the task's span; ctx
// carries it to the workflow, whose own spans are its children. Its
// attributes are set when it ends, all at once (endRun): the SDK grows a
// span's attributes by what each call adds.
func (s spans) startRun(ctx context.Context, c *store.ClaimedTask) (context.Context, trace.Span) {
	if !s.on {
		return ctx, nil
	}
	t := c.Task
	sc := tracing.TaskSpanContext(t.TraceID, t.ID, !c.TraceUnsampled)
	if !sc.IsValid() {
		return ctx, nil
	}
	return s.starter.StartSpan(ctx, tracing.SpanRun, sc)
}

// endRun ends an attempt's span with what the worker decided.
func endRun(span trace.Span, t *dockettype.Task, item *store.FinishItem, stopped bool) {
	if span == nil {
		return
	}
	attrs := [4]attribute.KeyValue{tracing.AttrTaskID.String(t.ID), tracing.AttrAttempt.Int(t.Attempt)}
	n := 3
	switch {
	case stopped:
		attrs[2] = tracing.AttrOutcome.String("stopped")
	case item.Code != "":
		attrs[2], attrs[3] = tracing.AttrOutcome.String(outcomeName(item.Kind)), tracing.AttrCode.String(metrics.CodeLabel(item.Code))
		n = 4
	default:
		attrs[2] = tracing.AttrOutcome.String(outcomeName(item.Kind))
	}
	span.SetAttributes(attrs[:n]...)
	if !stopped && (item.Kind == store.FinishFail || item.Kind == store.FinishRetry) {
		span.SetStatus(codes.Error, "")
	}
	span.End()
}

// finish adds to b the span of one fenced outcome write, from when the
// outcome was handed over (start) to now. link is the span of the request
// that carried it, for remote outcomes.
func (s spans) finish(b *endedBatch, task finishTask, item *store.FinishItem, start, now time.Time, applied bool,
	state dockettype.State, link trace.SpanContext) {
	attrs := [5]attribute.KeyValue{tracing.AttrTaskID.String(item.TaskID), tracing.AttrAttempt.Int(task.attempt),
		tracing.AttrOutcome.String(outcomeName(item.Kind))}
	n := 3
	switch {
	case !applied:
		attrs[n], attrs[n+1] = tracing.AttrFenced.Bool(true), tracing.AttrCode.String(string(dockettype.CodeStaleLease))
		n += 2
	case item.Code != "":
		attrs[n] = tracing.AttrCode.String(metrics.CodeLabel(item.Code))
		n++
	}
	if applied && state != "" {
		attrs[n] = tracing.AttrState.String(string(state))
		n++
	}
	b.add(tracing.EndedSpan{Name: tracing.SpanFinish, Parent: tracing.TaskSpanContext(task.traceID, item.TaskID, !task.unsampled),
		Start: start, End: now, Link: link}, attrs[:n]...)
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
