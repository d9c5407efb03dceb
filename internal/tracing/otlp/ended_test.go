package otlp

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/docket-dev/docket/internal/tracing"
)

// endedSample is a batch of ended spans: a sampled task's, an unsampled
// one's, one with a link and one without a parent.
func endedSample() []tracing.EndedSpan {
	start := time.Unix(1_700_000_000, 5)
	sampled := tracing.TaskSpanContext("4bf92f3577b34da6a3ce929d0e0e4736", "task-1", true)
	unsampled := tracing.TaskSpanContext("5bf92f3577b34da6a3ce929d0e0e4736", "task-2", false)
	link := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{7}, SpanID: trace.SpanID{8}, TraceFlags: trace.FlagsSampled})
	return []tracing.EndedSpan{
		{Name: tracing.SpanQueueWait, Parent: sampled, Kind: trace.SpanKindConsumer, Start: start, End: start.Add(time.Second),
			Attrs: []attribute.KeyValue{tracing.AttrTaskID.String("task-1"), tracing.AttrAttempt.Int(1)}},
		{Name: tracing.SpanQueueWait, Parent: unsampled, Kind: trace.SpanKindConsumer, Start: start, End: start.Add(time.Second),
			Attrs: []attribute.KeyValue{tracing.AttrTaskID.String("task-2"), tracing.AttrAttempt.Int(1)}},
		{Name: tracing.SpanFinish, Parent: sampled, Start: start.Add(2 * time.Second), End: start.Add(3 * time.Second), Link: link,
			Attrs: []attribute.KeyValue{tracing.AttrTaskID.String("task-1"), tracing.AttrOutcome.String("succeed"),
				tracing.AttrState.String("succeeded")}},
		{Name: tracing.SpanFinish, Start: start, End: start.Add(time.Millisecond),
			Attrs: []attribute.KeyValue{tracing.AttrTaskID.String("task-3")}},
	}
}

// twoProviders are two providers built alike, each recording its spans,
// shut down at the test's end.
func twoProviders(t *testing.T, res *resource.Resource) (p, api *Provider, rec, apiRec *tracetest.SpanRecorder) {
	t.Helper()
	rec, apiRec = tracetest.NewSpanRecorder(), tracetest.NewSpanRecorder()
	var err error
	if p, err = NewProvider(rec, res); err != nil {
		t.Fatal(err)
	}
	if api, err = NewProvider(apiRec, res); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = p.Shutdown(context.Background())
		_ = api.Shutdown(context.Background())
	})
	return p, api, rec, apiRec
}

// writeBothWays writes spans through a provider's writer and, on a second
// provider built alike, through its tracer's API (the SDK's own way); it
// returns what each recorded.
func writeBothWays(t *testing.T, spans []tracing.EndedSpan) (direct, viaAPI []sdktrace.ReadOnlySpan) {
	t.Helper()
	p, api, rec, apiRec := twoProviders(t, resource.NewSchemaless(attribute.String("service.name", "docket")))
	copied := func() []tracing.EndedSpan { // each writer keeps its attributes
		out := make([]tracing.EndedSpan, len(spans))
		for i, s := range spans {
			s.Attrs = append([]attribute.KeyValue(nil), s.Attrs...)
			out[i] = s
		}
		return out
	}
	if w := tracing.WriterFor(p); w != tracing.SpanWriter(p) {
		t.Fatal("the provider is not its own writer")
	}
	p.WriteSpans(copied())
	tracing.WriterFor(api.TracerProvider).WriteSpans(copied()) // the SDK provider alone: through its tracer
	return rec.Ended(), apiRec.Ended()
}

// The writer records what the SDK records for the same spans through its
// API, but for the random span IDs: names, parents, kinds, times,
// attributes, links, trace IDs and flags, resource and scope; an
// unsampled task's span is not recorded either way.
func TestEndedSpansAsTheSDKWritesThem(t *testing.T) {
	direct, viaAPI := writeBothWays(t, endedSample())
	if len(direct) != 3 || len(viaAPI) != 3 {
		t.Fatalf("recorded %d spans directly and %d through the API, want 3 each (the unsampled one left out)", len(direct), len(viaAPI))
	}
	for i := range direct {
		d, a := tracetest.SpanStubFromReadOnlySpan(direct[i]), tracetest.SpanStubFromReadOnlySpan(viaAPI[i])
		if !d.SpanContext.SpanID().IsValid() || d.SpanContext.SpanID() == a.SpanContext.SpanID() {
			t.Errorf("span %d: span ID %s (the API's %s)", i, d.SpanContext.SpanID(), a.SpanContext.SpanID())
		}
		if i == 2 { // no parent: a new trace of its own each way
			if !d.SpanContext.TraceID().IsValid() || d.Parent.IsValid() || a.Parent.IsValid() {
				t.Errorf("parentless span: trace %s, parent %v", d.SpanContext.TraceID(), d.Parent)
			}
			d.SpanContext, a.SpanContext = d.SpanContext.WithTraceID(trace.TraceID{}), a.SpanContext.WithTraceID(trace.TraceID{})
		}
		d.SpanContext = d.SpanContext.WithSpanID(trace.SpanID{})
		a.SpanContext = a.SpanContext.WithSpanID(trace.SpanID{})
		if d.Resource.Equivalent() != a.Resource.Equivalent() {
			t.Errorf("span %d: resource %v, want the provider's %v", i, d.Resource, a.Resource)
		}
		d.Resource, a.Resource = nil, nil
		if diff := stubDiff(d, a); diff != "" {
			t.Errorf("span %d (%s) differs from the SDK's: %s", i, a.Name, diff)
		}
	}
	if direct[0].Parent().SpanID() != tracing.TaskSpanID("task-1") || !direct[0].SpanContext().IsSampled() {
		t.Errorf("wait span: parent %v, context %v", direct[0].Parent(), direct[0].SpanContext())
	}
}

func stubDiff(d, a tracetest.SpanStub) string {
	var out []string
	check := func(what string, ok bool, got, want any) {
		if !ok {
			out = append(out, what+": got "+fmtAny(got)+", want "+fmtAny(want))
		}
	}
	check("name", d.Name == a.Name, d.Name, a.Name)
	check("context", d.SpanContext.Equal(a.SpanContext), d.SpanContext, a.SpanContext)
	check("parent", d.Parent.Equal(a.Parent), d.Parent, a.Parent)
	check("kind", d.SpanKind == a.SpanKind, d.SpanKind, a.SpanKind)
	check("start", d.StartTime.Equal(a.StartTime), d.StartTime, a.StartTime)
	check("end", d.EndTime.Equal(a.EndTime), d.EndTime, a.EndTime)
	check("attributes", sameAttrs(d.Attributes, a.Attributes), d.Attributes, a.Attributes)
	check("dropped attributes", d.DroppedAttributes == a.DroppedAttributes, d.DroppedAttributes, a.DroppedAttributes)
	check("links", len(d.Links) == len(a.Links) && (len(d.Links) == 0 || d.Links[0].SpanContext.Equal(a.Links[0].SpanContext)), d.Links, a.Links)
	check("status", d.Status == a.Status, d.Status, a.Status)
	check("scope", d.InstrumentationScope == a.InstrumentationScope, d.InstrumentationScope, a.InstrumentationScope)
	check("events", len(d.Events) == 0 && len(a.Events) == 0, d.Events, a.Events)
	return strings.Join(out, "; ")
}

// sameAttrs compares as sets (NewSet sorts the slice it is given: copies).
func sameAttrs(a, b []attribute.KeyValue) bool {
	as, bs := attribute.NewSet(slices.Clone(a)...), attribute.NewSet(slices.Clone(b)...)
	return as.Equals(&bs)
}

func fmtAny(v any) string { return fmt.Sprint(v) }

// The sampler of OTEL_TRACES_SAMPLER decides for written spans as for the
// SDK's: always_on records the unsampled task's span too, always_off
// nothing, and the span limits of OTEL_SPAN_* apply alike.
func TestEndedSpansFollowSamplerAndLimits(t *testing.T) {
	t.Setenv("OTEL_TRACES_SAMPLER", "always_on")
	direct, viaAPI := writeBothWays(t, endedSample())
	if len(direct) != 4 || len(viaAPI) != 4 {
		t.Fatalf("always_on: recorded %d and %d, want 4", len(direct), len(viaAPI))
	}
	t.Setenv("OTEL_TRACES_SAMPLER", "always_off")
	if direct, viaAPI = writeBothWays(t, endedSample()); len(direct) != 0 || len(viaAPI) != 0 {
		t.Fatalf("always_off: recorded %d and %d", len(direct), len(viaAPI))
	}
	t.Setenv("OTEL_TRACES_SAMPLER", "")
	t.Setenv("OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT", "2")
	t.Setenv("OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT", "4")
	direct, viaAPI = writeBothWays(t, endedSample())
	for i := range direct {
		d, a := tracetest.SpanStubFromReadOnlySpan(direct[i]), tracetest.SpanStubFromReadOnlySpan(viaAPI[i])
		if !sameAttrs(d.Attributes, a.Attributes) || d.DroppedAttributes != a.DroppedAttributes {
			t.Errorf("span %d: attributes %v (%d dropped), the SDK's %v (%d dropped)", i, d.Attributes, d.DroppedAttributes,
				a.Attributes, a.DroppedAttributes)
		}
	}
	if got := direct[1].Attributes(); len(got) != 2 || got[0].Value.AsString() != "task" || direct[1].DroppedAttributes() != 1 {
		t.Errorf("limited finish span %s: %v, %d dropped", direct[1].Name(), got, direct[1].DroppedAttributes())
	}
}

func TestSamplerFromEnv(t *testing.T) {
	for _, c := range []struct {
		name, arg string
		ok        bool
	}{
		{"", "", true}, {"always_on", "", true}, {"ALWAYS_OFF", "", true}, {"traceidratio", "0.25", true},
		{"parentbased_traceidratio", "", true}, {"parentbased_always_off", "", true},
		{"traceidratio", "2", false}, {"traceidratio", "x", false}, {"jaeger_remote", "", false},
	} {
		_, _, err := samplerFromEnv(func(k string) string {
			return map[string]string{"OTEL_TRACES_SAMPLER": c.name, "OTEL_TRACES_SAMPLER_ARG": c.arg}[k]
		})
		if (err == nil) != c.ok {
			t.Errorf("%q %q: error %v, want ok %v", c.name, c.arg, err, c.ok)
		}
	}
}

// startBothWays runs ops on a span started by a provider's StartSpan and
// on one started through the SDK's tracer (on a second provider built
// alike), and returns what each recorded.
func startBothWays(t *testing.T, parent trace.SpanContext, ops func(ctx context.Context, s trace.Span)) (live, viaAPI []sdktrace.ReadOnlySpan) {
	t.Helper()
	p, api, rec, apiRec := twoProviders(t, nil)
	if tracing.StarterFor(p) != tracing.SpanStarter(p) {
		t.Fatal("the provider is not its own starter")
	}
	ctx, s := p.StartSpan(context.Background(), tracing.SpanRun, parent)
	ops(ctx, s)
	ctx, s = tracing.StarterFor(api.TracerProvider).StartSpan(context.Background(), tracing.SpanRun, parent)
	ops(ctx, s)
	return rec.Ended(), apiRec.Ended()
}

// What Docket does with a run's span (attributes, an error status, End)
// the provider records itself, as the SDK would; the workflow's own spans
// are its children.
func TestLiveSpanAsTheSDKRecordsIt(t *testing.T) {
	parent := tracing.TaskSpanContext("4bf92f3577b34da6a3ce929d0e0e4736", "task-1", true)
	start := time.Now()
	var liveSpan trace.SpanContext
	live, viaAPI := startBothWays(t, parent, func(ctx context.Context, s trace.Span) {
		if !s.IsRecording() {
			t.Fatal("a sampled task's run span does not record")
		}
		_, child := s.TracerProvider().Tracer("workflow").Start(ctx, "workflow.own")
		child.End()
		s.SetAttributes(tracing.AttrTaskID.String("task-1"), tracing.AttrAttempt.Int(2), tracing.AttrOutcome.String("fail"))
		s.SetStatus(codes.Error, "")
		s.SetStatus(codes.Unset, "")
		s.End()
		s.End() // once only
		if s.IsRecording() {
			t.Error("an ended span records")
		}
		if !liveSpan.IsValid() {
			liveSpan = s.SpanContext()
		}
	})
	if len(live) != 2 || len(viaAPI) != 2 {
		t.Fatalf("recorded %d and %d spans, want the child and the run each", len(live), len(viaAPI))
	}
	child, run := live[0], live[1]
	if !run.SpanContext().Equal(liveSpan) || child.Parent().SpanID() != liveSpan.SpanID() || child.SpanContext().TraceID() != parent.TraceID() {
		t.Errorf("run %v, child under %v", run.SpanContext(), child.Parent())
	}
	if run.StartTime().Before(start) || run.EndTime().Before(run.StartTime()) {
		t.Errorf("run from %v to %v", run.StartTime(), run.EndTime())
	}
	compareStubs(t, run, viaAPI[1])
}

// A call Docket does not make (an event, an error, a link, a new name, an
// attribute set again) hands the span to the SDK, with its IDs, start and
// what it had recorded: the result is the SDK's span.
func TestLiveSpanUpgrades(t *testing.T) {
	parent := tracing.TaskSpanContext("4bf92f3577b34da6a3ce929d0e0e4736", "task-1", true)
	at := time.Unix(1_700_000_000, 0)
	var ids []trace.SpanContext
	live, viaAPI := startBothWays(t, parent, func(_ context.Context, s trace.Span) {
		ids = append(ids, s.SpanContext())
		s.SetAttributes(tracing.AttrTaskID.String("task-1"))
		s.SetStatus(codes.Error, "first")
		s.SetAttributes(tracing.AttrTaskID.String("task-2"), attribute.Bool("mine", true)) // again: the SDK's from here
		s.AddEvent("step", trace.WithTimestamp(at), trace.WithAttributes(attribute.Int("n", 1)))
		s.RecordError(errors.New("boom"), trace.WithTimestamp(at))
		s.AddLink(trace.Link{SpanContext: parent})
		s.SetName("renamed")
		s.End(trace.WithTimestamp(at.Add(time.Second)))
	})
	if len(live) != 1 || len(viaAPI) != 1 {
		t.Fatalf("recorded %d and %d spans", len(live), len(viaAPI))
	}
	if !live[0].SpanContext().Equal(ids[0]) {
		t.Errorf("the SDK's span %v, want the IDs handed out at start %v", live[0].SpanContext(), ids[0])
	}
	compareStubs(t, live[0], viaAPI[0])
	d, a := tracetest.SpanStubFromReadOnlySpan(live[0]), tracetest.SpanStubFromReadOnlySpan(viaAPI[0])
	if len(d.Events) != 2 || len(a.Events) != 2 || d.Events[1].Name != "exception" || len(d.Links) != 1 || d.Name != "renamed" {
		t.Errorf("events %v, links %v, name %s", d.Events, d.Links, d.Name)
	}
}

// An unsampled task's run span records nothing, and neither do its
// children.
func TestLiveSpanUnsampled(t *testing.T) {
	parent := tracing.TaskSpanContext("4bf92f3577b34da6a3ce929d0e0e4736", "task-1", false)
	live, viaAPI := startBothWays(t, parent, func(ctx context.Context, s trace.Span) {
		if s.IsRecording() {
			t.Error("an unsampled task's run span records")
		}
		_, child := s.TracerProvider().Tracer("workflow").Start(ctx, "workflow.own")
		child.End()
		s.End()
	})
	if len(live) != 0 || len(viaAPI) != 0 {
		t.Fatalf("recorded %d and %d spans", len(live), len(viaAPI))
	}
}

// compareStubs compares two recorded spans but for their span IDs and
// times.
func compareStubs(t *testing.T, got, want sdktrace.ReadOnlySpan) {
	t.Helper()
	d, a := tracetest.SpanStubFromReadOnlySpan(got), tracetest.SpanStubFromReadOnlySpan(want)
	d.SpanContext, a.SpanContext = d.SpanContext.WithSpanID(trace.SpanID{}), a.SpanContext.WithSpanID(trace.SpanID{})
	d.StartTime, a.StartTime = time.Time{}, time.Time{}
	d.EndTime, a.EndTime = time.Time{}, time.Time{}
	if d.Resource.Equivalent() != a.Resource.Equivalent() {
		t.Errorf("resource %v, want %v", d.Resource, a.Resource)
	}
	d.Resource, a.Resource = nil, nil
	if len(d.Events) != len(a.Events) {
		t.Errorf("events %v, want %v", d.Events, a.Events)
	}
	for i := range min(len(d.Events), len(a.Events)) {
		if d.Events[i].Name != a.Events[i].Name || !sameAttrs(d.Events[i].Attributes, a.Events[i].Attributes) {
			t.Errorf("event %d: %v, want %v", i, d.Events[i], a.Events[i])
		}
	}
	d.Events, a.Events = nil, nil
	if diff := stubDiff(d, a); diff != "" {
		t.Errorf("%s differs from the SDK's: %s", a.Name, diff)
	}
}
