package httpapi

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// waitRetryAfter is the Retry-After of a long poll refused by the limiter.
const waitRetryAfter = time.Second

// waitLimiter bounds the long polls held at once, in total and per tenant:
// each one holds a request (and, until the queue wakes waiters, reads the
// task every second), so one tenant cannot take them all.
type waitLimiter struct {
	maxTotal, maxPerTenant int // < 0: no bound
	gauge                  prometheus.Gauge

	mu      sync.Mutex
	total   int
	tenants map[string]int
}

func newWaitLimiter(maxTotal, maxPerTenant int, gauge prometheus.Gauge) *waitLimiter {
	return &waitLimiter{maxTotal: maxTotal, maxPerTenant: maxPerTenant, gauge: gauge, tenants: map[string]int{}}
}

// acquire takes a slot for tenant, or reports false when a bound is reached.
func (l *waitLimiter) acquire(tenant string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.maxTotal >= 0 && l.total >= l.maxTotal || l.maxPerTenant >= 0 && l.tenants[tenant] >= l.maxPerTenant {
		return false
	}
	l.total++
	l.tenants[tenant]++
	l.gauge.Inc()
	return true
}

// release gives back a slot acquire took.
func (l *waitLimiter) release(tenant string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total--
	if l.tenants[tenant]--; l.tenants[tenant] == 0 {
		delete(l.tenants, tenant)
	}
	l.gauge.Dec()
}
