package node

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/docket-dev/docket/internal/logtest"
	"github.com/docket-dev/docket/internal/metrics"
)

// Every error OpenTelemetry reports is counted; the node logs a line a
// minute at most, with the count since the last and without the error's
// text.
func TestTracingErrors(t *testing.T) {
	log, buf := logtest.New(t)
	clock := clockwork.NewFakeClock()
	m := metrics.New()
	h := &tracingErrors{log: log, failed: m.TracingExportFailed, clock: clock}
	secret := errors.New("collector said: secret body")
	for range 3 {
		h.Handle(secret)
	}
	clock.Advance(30 * time.Second)
	h.Handle(secret)
	if got := strings.Count(buf.String(), "tracing: spans not exported"); got != 1 {
		t.Fatalf("%d lines in the first minute, want 1:\n%s", got, buf.String())
	}
	clock.Advance(31 * time.Second)
	h.Handle(secret)
	logs := buf.String()
	if got := strings.Count(logs, "tracing: spans not exported"); got != 2 || !strings.Contains(logs, `"failures":4`) {
		t.Fatalf("after a minute: want a second line counting the 4 errors since the first:\n%s", logs)
	}
	if strings.Contains(logs, "secret") {
		t.Fatalf("the error's text was logged:\n%s", logs)
	}
	if got := testutil.ToFloat64(m.TracingExportFailed); got != 5 {
		t.Fatalf("docket_tracing_export_failures_total = %v, want 5", got)
	}
}
