package metrics

import (
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// SchedulerRun is what one scheduler of this node has done since it
// started.
type SchedulerRun struct {
	Name          string
	StartedAt     time.Time
	LastRunAt     *time.Time // end of the last tick, failed or not; nil before the first
	LastSuccessAt *time.Time // end of the last tick that succeeded
	Runs          int64      // ticks run, failed ones included
	Failures      int64      // ticks that failed or panicked
}

// SchedulerRuns records the ticks of the node's schedulers, for the admin
// stats and the scheduler lag gauge. The schedulers write it once per tick;
// it is safe for concurrent use.
type SchedulerRuns struct {
	mu   sync.Mutex
	runs map[string]*SchedulerRun
}

func newSchedulerRuns() *SchedulerRuns { return &SchedulerRuns{runs: map[string]*SchedulerRun{}} }

// Started records that scheduler name started its loop at at.
func (r *SchedulerRuns) Started(name string, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.get(name).StartedAt = at
}

// Ran records a tick of scheduler name that ended at at.
func (r *SchedulerRuns) Ran(name string, at time.Time, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	run := r.get(name)
	run.Runs++
	run.LastRunAt = &at
	if ok {
		run.LastSuccessAt = &at
	} else {
		run.Failures++
	}
}

func (r *SchedulerRuns) get(name string) *SchedulerRun {
	run, ok := r.runs[name]
	if !ok {
		run = &SchedulerRun{Name: name}
		r.runs[name] = run
	}
	return run
}

// Snapshot returns a copy of every scheduler's record, by name.
func (r *SchedulerRuns) Snapshot() []SchedulerRun {
	r.mu.Lock()
	out := make([]SchedulerRun, 0, len(r.runs))
	for _, run := range r.runs {
		out = append(out, *run)
	}
	r.mu.Unlock()
	slices.SortFunc(out, func(a, b SchedulerRun) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Lag is how long the scheduler has gone without a successful tick at now:
// since its last success, or since it started when none succeeded yet.
func (run SchedulerRun) Lag(now time.Time) time.Duration {
	since := run.StartedAt
	if run.LastSuccessAt != nil {
		since = *run.LastSuccessAt
	}
	return max(now.Sub(since), 0)
}

// ObserveSchedulerLag registers the gauge docket_scheduler_lag_seconds
// (label scheduler): the time since each scheduler's last successful tick,
// or since it started when none succeeded yet, computed at scrape time with
// now (the node's injected clock). Call it once per Metrics.
func (m *Metrics) ObserveSchedulerLag(now func() time.Time) {
	m.Registry.MustRegister(&schedulerLagCollector{runs: m.Schedulers, now: now})
}

var schedulerLagDesc = prometheus.NewDesc("docket_scheduler_lag_seconds",
	"Time since the scheduler's last successful tick on this node (since its start when none succeeded yet).", []string{"scheduler"}, nil)

type schedulerLagCollector struct {
	runs *SchedulerRuns
	now  func() time.Time
}

func (c *schedulerLagCollector) Describe(ch chan<- *prometheus.Desc) { ch <- schedulerLagDesc }

func (c *schedulerLagCollector) Collect(ch chan<- prometheus.Metric) {
	now := c.now()
	for _, run := range c.runs.Snapshot() {
		if run.StartedAt.IsZero() && run.LastSuccessAt == nil {
			continue
		}
		ch <- prometheus.MustNewConstMetric(schedulerLagDesc, prometheus.GaugeValue, run.Lag(now).Seconds(), run.Name)
	}
}
