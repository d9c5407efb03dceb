package metrics

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/docket-dev/docket/dockettype"
)

// PoolQueue is one pool's tasks as the store counts them, across all nodes.
type PoolQueue struct {
	Pool     dockettype.Pool
	Capacity int // most non-terminal tasks admitted; <= 0: unlimited
	InFlight int // non-terminal tasks
	Queued   int
	Running  int
	// RemoteRunning counts the running tasks that remote workers hold.
	RemoteRunning int
	// OldestQueuedAt is when the oldest task waiting to run was created
	// (nil when none waits).
	OldestQueuedAt *time.Time
}

// QueueRead is what one store read of ObserveQueue says.
type QueueRead struct {
	Pools []PoolQueue
	// StoredBytes is what every tenant keeps together: the bytes of
	// inputs, results and evidence counted against storage quotas.
	StoredBytes int64
}

// Defaults of QueueGauges.
const (
	DefaultQueueReadTimeout = 2 * time.Second
	DefaultQueueReadMaxAge  = time.Second
)

// QueueGauges configures ObserveQueue.
type QueueGauges struct {
	// Read returns the pools and stored bytes as the store counts them
	// (store.Stats).
	Read func(ctx context.Context) (QueueRead, error)
	// Now is the node's clock: it dates reads and measures ages.
	Now func() time.Time
	// Timeout bounds one Read; default DefaultQueueReadTimeout.
	Timeout time.Duration
	// MaxAge is how long a read (or a failed one) answers scrapes before
	// the store is asked again; default DefaultQueueReadMaxAge. However
	// often Prometheus (or anyone) scrapes, the store is read at most once
	// per MaxAge.
	MaxAge time.Duration
}

// ObserveQueue registers gauges read from the store when scraped, all
// labelled by pool only: docket_pool_queued, docket_pool_running,
// docket_pool_in_flight, docket_pool_capacity and
// docket_pool_capacity_in_use_ratio (pools with a capacity), and
// docket_pool_oldest_queued_age_seconds (0 when nothing waits), and
// docket_stored_bytes, unlabelled (tenants are never a label). A read that
// fails or times out is counted in docket_store_errors_total
// (operation="stats") and the scrape shows none of these gauges. Call it
// once per Metrics.
func (m *Metrics) ObserveQueue(g QueueGauges) {
	if g.Timeout <= 0 {
		g.Timeout = DefaultQueueReadTimeout
	}
	if g.MaxAge <= 0 {
		g.MaxAge = DefaultQueueReadMaxAge
	}
	m.Registry.MustRegister(&queueCollector{cfg: g, storeErrors: m.StoreErrors.WithLabelValues("stats")})
}

var (
	poolQueuedDesc   = prometheus.NewDesc("docket_pool_queued", "Tasks of a pool waiting to run (all nodes).", []string{"pool"}, nil)
	poolRunningDesc  = prometheus.NewDesc("docket_pool_running", "Tasks of a pool running (all nodes).", []string{"pool"}, nil)
	poolInFlightDesc = prometheus.NewDesc("docket_pool_in_flight", "Non-terminal tasks of a pool: what its capacity is checked against.", []string{"pool"}, nil)
	poolCapacityDesc = prometheus.NewDesc("docket_pool_capacity", "Most non-terminal tasks a pool admits (pools with a capacity).", []string{"pool"}, nil)
	poolInUseDesc    = prometheus.NewDesc("docket_pool_capacity_in_use_ratio", "In-flight tasks of a pool over its capacity (0 to 1).", []string{"pool"}, nil)
	poolOldestDesc   = prometheus.NewDesc("docket_pool_oldest_queued_age_seconds", "Age of the oldest task of a pool waiting to run (0 when none waits).", []string{"pool"}, nil)
	remoteLeasesDesc = prometheus.NewDesc("docket_remote_leases", "Tasks of a pool running in remote workers (all nodes).", []string{"pool"}, nil)
	storedBytesDesc  = prometheus.NewDesc("docket_stored_bytes", "Bytes of task inputs, results and evidence every tenant keeps (what storage quotas count), all nodes.", nil, nil)
)

// queueCollector reads the store at scrape time through a small cache:
// concurrent scrapes share one read, and a read answers for MaxAge.
type queueCollector struct {
	cfg         QueueGauges
	storeErrors prometheus.Counter

	mu     sync.Mutex
	readAt time.Time
	last   QueueRead
	err    error
	valid  bool // a read (or a failure) is cached
}

func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{poolQueuedDesc, poolRunningDesc, poolInFlightDesc, poolCapacityDesc, poolInUseDesc, poolOldestDesc, remoteLeasesDesc, storedBytesDesc} {
		ch <- d
	}
}

func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	read, now, err := c.read()
	if err != nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(storedBytesDesc, prometheus.GaugeValue, float64(read.StoredBytes))
	gauge := func(d *prometheus.Desc, v float64, p dockettype.Pool) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, string(p))
	}
	for _, p := range read.Pools {
		gauge(poolQueuedDesc, float64(p.Queued), p.Pool)
		gauge(poolRunningDesc, float64(p.Running), p.Pool)
		gauge(poolInFlightDesc, float64(p.InFlight), p.Pool)
		gauge(remoteLeasesDesc, float64(p.RemoteRunning), p.Pool)
		if p.Capacity > 0 {
			gauge(poolCapacityDesc, float64(p.Capacity), p.Pool)
			gauge(poolInUseDesc, float64(p.InFlight)/float64(p.Capacity), p.Pool)
		}
		var age float64
		if p.OldestQueuedAt != nil {
			age = max(now.Sub(*p.OldestQueuedAt).Seconds(), 0)
		}
		gauge(poolOldestDesc, age, p.Pool)
	}
}

// read returns the cached read when it is recent enough, or reads the
// store (one scrape at a time) and caches the outcome.
func (c *queueCollector) read() (QueueRead, time.Time, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.cfg.Now()
	if c.valid && now.Sub(c.readAt) < c.cfg.MaxAge {
		return c.last, now, c.err
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.Timeout)
	defer cancel()
	read, err := c.cfg.Read(ctx)
	if err != nil {
		c.storeErrors.Inc()
		read = QueueRead{}
	}
	c.readAt, c.last, c.err, c.valid = now, read, err, true
	return read, now, err
}
