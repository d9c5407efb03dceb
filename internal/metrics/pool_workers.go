package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/docket-dev/docket/dockettype"
)

// PoolWorkers is one pool's workers on this node at one moment.
type PoolWorkers struct {
	Pool    dockettype.Pool
	Workers int // configured workers
	Busy    int // workers running a task now
}

// ObservePools registers the gauges docket_pool_workers and
// docket_pool_busy_workers (label pool), read from read at every scrape.
// Call it once per Metrics.
func (m *Metrics) ObservePools(read func() []PoolWorkers) {
	m.Registry.MustRegister(&poolCollector{read: read})
}

var (
	poolWorkersDesc = prometheus.NewDesc("docket_pool_workers", "Workers of a pool on this node.", []string{"pool"}, nil)
	poolBusyDesc    = prometheus.NewDesc("docket_pool_busy_workers", "Workers of a pool on this node running a task now.", []string{"pool"}, nil)
)

// poolCollector reads the pools at scrape time, so the gauges never lag and
// the queue needs no metric calls on its hot path.
type poolCollector struct {
	read func() []PoolWorkers
}

func (c *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- poolWorkersDesc
	ch <- poolBusyDesc
}

func (c *poolCollector) Collect(ch chan<- prometheus.Metric) {
	for _, p := range c.read() {
		ch <- prometheus.MustNewConstMetric(poolWorkersDesc, prometheus.GaugeValue, float64(p.Workers), string(p.Pool))
		ch <- prometheus.MustNewConstMetric(poolBusyDesc, prometheus.GaugeValue, float64(p.Busy), string(p.Pool))
	}
}
