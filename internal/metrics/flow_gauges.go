package metrics

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// FlowGauges configures ObserveFlow.
type FlowGauges struct {
	// Read returns the tasks held back, by why ("paused", "rate_limit",
	// "concurrency_key"; store.FlowWaiting).
	Read func(ctx context.Context, now time.Time) (map[string]int, error)
	// Now is the node's clock.
	Now func() time.Time
	// Timeout bounds one Read; default DefaultQueueReadTimeout.
	Timeout time.Duration
	// MaxAge is how long a read answers scrapes; default
	// DefaultQueueReadMaxAge.
	MaxAge time.Duration
}

var flowWaitingDesc = prometheus.NewDesc("docket_tasks_waiting",
	"Queued tasks held back from starting (all nodes), by what holds them: paused, rate_limit, concurrency_key.",
	[]string{"on"}, nil)

// ObserveFlow registers docket_tasks_waiting{on}, read from the store when
// scraped, at most once per MaxAge. A failed read is counted in
// docket_store_errors_total (operation="flow_waiting") and the scrape
// shows no such gauge. Call it once per Metrics.
func (m *Metrics) ObserveFlow(g FlowGauges) {
	if g.Timeout <= 0 {
		g.Timeout = DefaultQueueReadTimeout
	}
	if g.MaxAge <= 0 {
		g.MaxAge = DefaultQueueReadMaxAge
	}
	m.Registry.MustRegister(&flowCollector{cfg: g, storeErrors: m.StoreErrors.WithLabelValues("flow_waiting")})
}

type flowCollector struct {
	cfg         FlowGauges
	storeErrors prometheus.Counter

	mu     sync.Mutex
	readAt time.Time
	counts map[string]int
	err    error
	valid  bool
}

func (c *flowCollector) Describe(ch chan<- *prometheus.Desc) { ch <- flowWaitingDesc }

func (c *flowCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.cfg.Now()
	if !c.valid || now.Sub(c.readAt) >= c.cfg.MaxAge || now.Before(c.readAt) {
		ctx, cancel := context.WithTimeout(context.Background(), c.cfg.Timeout)
		c.counts, c.err = c.cfg.Read(ctx, now)
		cancel()
		if c.err != nil {
			c.storeErrors.Inc()
		}
		c.readAt, c.valid = now, true
	}
	if c.err != nil {
		return
	}
	for on, n := range c.counts {
		ch <- prometheus.MustNewConstMetric(flowWaitingDesc, prometheus.GaugeValue, float64(n), on)
	}
}
