package node

import (
	"log/slog"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/prometheus/client_golang/prometheus"
)

// tracingErrorsEvery is how often at most the node logs that spans were
// not exported: a collector that is down fails every batch.
const tracingErrorsEvery = time.Minute

// tracingErrors is OpenTelemetry's error handler while the node exports
// spans (otel.SetErrorHandler): each error the SDK or the exporter reports,
// most often a batch the collector did not take, is counted
// (docket_tracing_export_failures_total), and the node logs one JSON line
// a minute at most, with the count since the last, never the error's text
// (an exporter's may quote the collector). Left alone, OpenTelemetry
// prints each error as plain text on standard error, among the JSON lines.
type tracingErrors struct {
	log    *slog.Logger
	failed prometheus.Counter
	clock  clockwork.Clock

	mu      sync.Mutex
	logged  time.Time // when the last line was written
	pending int       // errors since
}

func (h *tracingErrors) Handle(error) {
	h.failed.Inc()
	h.mu.Lock()
	h.pending++
	now := h.clock.Now()
	if !h.logged.IsZero() && now.Sub(h.logged) < tracingErrorsEvery {
		h.mu.Unlock()
		return
	}
	n := h.pending
	h.logged, h.pending = now, 0
	h.mu.Unlock()
	h.log.Warn("tracing: spans not exported", "failures", n)
}
