package tracing

import (
	"regexp"
	"testing"

	"go.opentelemetry.io/otel/trace/noop"
)

func TestTaskSpanContext(t *testing.T) {
	const tid = "4bf92f3577b34da6a3ce929d0e0e4736"
	a, b := TaskSpanID("0190f5d6-aaaa-7000-8000-000000000001"), TaskSpanID("0190f5d6-aaaa-7000-8000-000000000002")
	if !a.IsValid() || a == b || a != TaskSpanID("0190f5d6-aaaa-7000-8000-000000000001") {
		t.Fatalf("task span IDs %s, %s: want valid, distinct and stable", a, b)
	}
	tp := Traceparent(tid, "0190f5d6-aaaa-7000-8000-000000000001", true)
	if !regexp.MustCompile(`^00-`+tid+`-[0-9a-f]{16}-01$`).MatchString(tp) || tp[36:52] != a.String() {
		t.Fatalf("traceparent %q", tp)
	}
	// An unsampled trace's task span is unsampled: its flags are 00.
	if tp := Traceparent(tid, "0190f5d6-aaaa-7000-8000-000000000001", false); !regexp.MustCompile(`^00-` + tid + `-[0-9a-f]{16}-00$`).MatchString(tp) {
		t.Fatalf("unsampled traceparent %q", tp)
	}
	if sc := TaskSpanContext(tid, "x", false); !sc.IsValid() || sc.IsSampled() {
		t.Fatalf("unsampled task span context %v: want valid, not sampled", sc)
	}
	for _, bad := range []string{"", "t", "00000000000000000000000000000000", "4BF92F3577B34DA6A3CE929D0E0E4736"} {
		if Traceparent(bad, "x", true) != "" || TaskSpanContext(bad, "x", true).IsValid() {
			t.Errorf("trace id %q gave a span context", bad)
		}
	}
}

func TestEnabled(t *testing.T) {
	if Enabled(nil) || Enabled(noop.NewTracerProvider()) {
		t.Fatal("nil or no-op provider reported enabled")
	}
}
