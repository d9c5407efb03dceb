// Package metrics defines Docket's Prometheus collectors on a private
// registry. Labels carry pools, states, workflows, operations and error
// codes from the closed set — never tenant IDs, payloads or error text.
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/docket-dev/docket/dockettype"
)

// Metrics holds every collector. Create one per process (or per test).
type Metrics struct {
	Registry *prometheus.Registry

	Submissions         *prometheus.CounterVec   // pool, outcome (admitted|replayed)
	AdmissionRejections *prometheus.CounterVec   // code
	TerminalOutcomes    *prometheus.CounterVec   // pool, state
	Retries             *prometheus.CounterVec   // pool, code
	FencingRejections   *prometheus.CounterVec   // operation (finish|heartbeat|evidence|remote_finish|remote_heartbeat|remote_evidence|forged_lease)
	StoreErrors         *prometheus.CounterVec   // operation
	WorkerPanics        *prometheus.CounterVec   // workflow
	WorkerErrors        *prometheus.CounterVec   // workflow, code
	Claims              *prometheus.CounterVec   // pool
	ThrottledClaims     *prometheus.CounterVec   // pool: claims a rate limit or a pause held tasks back from
	HandOffs            *prometheus.CounterVec   // pool: tasks a finish started on this node (concurrency keys)
	StartLatency        *prometheus.HistogramVec // pool: admission → first start
	SchedulerTicks      *prometheus.CounterVec   // scheduler
	SchedulerErrors     *prometheus.CounterVec   // scheduler
	SchedulerPanics     *prometheus.CounterVec   // scheduler
	SchedulerTick       *prometheus.HistogramVec // scheduler: tick duration
	LeasesRecovered     *prometheus.CounterVec   // outcome (requeued|failed)
	DeadlineTimeouts    *prometheus.CounterVec   // from (queued|running)
	TasksDeleted        prometheus.Counter       // by the retention cleaner
	OutcomesDropped     *prometheus.CounterVec   // pool, reason (invalid|stopping): attempt outcomes never written
	LeasesReleased      *prometheus.CounterVec   // pool: leases handed back at shutdown
	WorkersAbandoned    *prometheus.CounterVec   // pool: workers still running when Stop gave up on them
	HTTPRequests        *prometheus.CounterVec   // route, status
	TracingExportFailed prometheus.Counter       // span batches the OTLP exporter could not deliver
	HTTPDuration        *prometheus.HistogramVec // route, class (2xx, 4xx, …)
	HTTPLongPolls       prometheus.Gauge         // long polls (GET ?wait=) being held
	WorkerLongPolls     prometheus.Gauge         // idle remote workers' claims being held
	ClockOffset         prometheus.Gauge         // the database's clock minus this node's (clock sync)
	HTTPConnections     prometheus.Gauge         // open client connections
	HTTPConnsShed       *prometheus.CounterVec   // reason (idle|no_header|per_ip): connections closed to free a slot or refused
	HTTPBodyBytes       prometheus.Gauge         // bytes of request bodies reserved (being read or decoded)
	RemoteWorkers       prometheus.Gauge         // remote workers this node answered within the lease TTL
	ScheduleFires       *prometheus.CounterVec   // outcome (admitted|replayed|skipped|missed|refused|deferred)
	ScheduleLag         prometheus.Observer      // fire time → admission of a schedule's task by this node

	// Schedulers records the ticks of this node's schedulers (admin stats,
	// docket_scheduler_lag_seconds).
	Schedulers *SchedulerRuns
}

// New creates the collectors on a fresh registry (with Go and process
// collectors).
func New() *Metrics {
	r := prometheus.NewRegistry()
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "docket", Name: name, Help: help}, labels)
		r.MustRegister(c)
		return c
	}
	histogram := func(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
		h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "docket", Name: name, Help: help, Buckets: buckets}, labels)
		r.MustRegister(h)
		return h
	}
	gauge := func(name, help string) prometheus.Gauge {
		g := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "docket", Name: name, Help: help})
		r.MustRegister(g)
		return g
	}
	m := &Metrics{
		Registry:            r,
		Submissions:         counter("submissions_total", "Accepted submissions by pool and outcome (admitted, replayed).", "pool", "outcome"),
		AdmissionRejections: counter("admission_rejections_total", "Refused submissions by error code.", "code"),
		TerminalOutcomes:    counter("task_terminal_total", "Tasks that reached a terminal state, by pool and state.", "pool", "state"),
		Retries:             counter("task_retries_total", "Attempts re-queued for retry, by pool and code.", "pool", "code"),
		FencingRejections:   counter("fencing_rejections_total", "Worker writes refused because the lease was stale, by operation.", "operation"),
		StoreErrors:         counter("store_errors_total", "Failed store operations, by operation.", "operation"),
		WorkerPanics:        counter("worker_panics_total", "Recovered workflow panics, by workflow.", "workflow"),
		WorkerErrors:        counter("worker_errors_total", "Unexpected (unclassified) workflow errors, by workflow and code.", "workflow", "code"),
		Claims:              counter("claims_total", "Tasks claimed by this node, by pool.", "pool"),
		ThrottledClaims:     counter("throttled_claims_total", "Claims of this node that a rate limit or a pause held ready tasks back from, by pool.", "pool"),
		HandOffs:            counter("key_handoffs_total", "Tasks a finish on this node started at once in the concurrency-key slot it freed (included in claims_total), by pool.", "pool"),
		StartLatency:        histogram("task_start_latency_seconds", "Time from admission to first start, by pool.", prometheus.ExponentialBuckets(0.001, 2, 18), "pool"),
		SchedulerTicks:      counter("scheduler_ticks_total", "Completed scheduler ticks, by scheduler.", "scheduler"),
		SchedulerErrors:     counter("scheduler_errors_total", "Scheduler ticks that failed, by scheduler.", "scheduler"),
		SchedulerPanics:     counter("scheduler_panics_total", "Recovered scheduler panics, by scheduler.", "scheduler"),
		SchedulerTick:       histogram("scheduler_tick_seconds", "Scheduler tick duration, by scheduler.", prometheus.ExponentialBuckets(0.0005, 2, 16), "scheduler"),
		LeasesRecovered:     counter("leases_recovered_total", "Expired leases recovered, by outcome (requeued, failed).", "outcome"),
		DeadlineTimeouts:    counter("deadline_timeouts_total", "Tasks timed out by the deadline scheduler, by prior state.", "from"),
		TasksDeleted:        counter("tasks_deleted_total", "Finished tasks the retention cleaner deleted, with their history.").WithLabelValues(),
		OutcomesDropped:     counter("outcomes_dropped_total", "Attempt outcomes the completer gave up writing (the lease lapses and recovery runs the task again), by pool and reason (invalid, stopping).", "pool", "reason"),
		LeasesReleased:      counter("leases_released_total", "Leases handed back to the queue at shutdown (attempt not charged), by pool.", "pool"),
		WorkersAbandoned:    counter("workers_abandoned_total", "Workers that ignored cancellation past the shutdown bounds and were abandoned (their lease lapses), by pool.", "pool"),
		HTTPRequests:        counter("http_requests_total", "HTTP requests by route and status code.", "route", "status"),
		TracingExportFailed: counter("tracing_export_failures_total", "Failures OpenTelemetry reported while this node exported spans (most often a batch the collector did not take).").WithLabelValues(),
		HTTPDuration: histogram("http_request_duration_seconds", "HTTP request duration, by route pattern and status class (2xx, 4xx, 5xx).",
			[]float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}, "route", "class"),
		ClockOffset:     gauge("clock_offset_seconds", "The database's clock minus this node's, as last measured; lease expiries and deadlines use the database's."),
		HTTPLongPolls:   gauge("http_long_polls", "Long polls (GET /v1/tasks/{id}?wait=) being held."),
		WorkerLongPolls: gauge("worker_long_polls", "Claims of idle remote workers (POST /v1/worker/claim with wait_ms) being held."),
		HTTPConnections: gauge("http_open_connections", "Open client connections (bounded by --max-connections)."),
		HTTPConnsShed:   counter("http_connections_shed_total", "Client connections closed to free a slot near the cap (idle: kept alive with no request; no_header: no complete request header yet) or refused over --max-connections-per-ip (per_ip), by reason.", "reason"),
		HTTPBodyBytes:   gauge("http_body_bytes", "Bytes of request bodies being read or decoded, reserved against --max-body-memory."),
		RemoteWorkers:   gauge("remote_workers", "Remote workers this node answered within the lease TTL."),
		ScheduleFires:   counter("schedule_fires_total", "Fire times of periodic schedules handled by this node, by outcome (admitted, replayed, skipped: overlap, missed: dropped, refused: for good, deferred: a 429 tried again).", "outcome"),
		ScheduleLag: histogram("schedule_fire_lag_seconds", "Time from a schedule's fire time to the admission of its task, for the tasks this node admitted.",
			[]float64{.01, .025, .05, .1, .25, .5, .75, 1, 1.5, 2, 5, 10, 30, 60}).WithLabelValues(),
		Schedulers: newSchedulerRuns(),
	}
	return m
}

// CodeLabel returns c when it is in the closed set and "workflow_error"
// otherwise, so a workflow's own code cannot grow label cardinality.
func CodeLabel(c dockettype.Code) string {
	if c.Known() {
		return string(c)
	}
	return string(dockettype.CodeWorkflowError)
}
