package queue

import (
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"time"

	"github.com/google/uuid"
	"github.com/jonboulle/clockwork"
	"go.opentelemetry.io/otel/trace"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/defaults"
	"github.com/docket-dev/docket/internal/metrics"
)

// PoolConfig sizes one pool.
type PoolConfig struct {
	// Workers is how many tasks of the pool run at once on this node; 0:
	// the default; defaults.NoWorkers (< 0): none (admission still works).
	Workers int
	// Capacity is the most non-terminal tasks admitted to the pool, across
	// all nodes; 0: the default; defaults.Unlimited (< 0): no bound.
	Capacity int
}

// Config tunes the ExecutionService. Zero values take the defaults
// (package defaults, or the values named below for the queue's own
// tunables); a setting that can be unlimited takes defaults.Unlimited.
type Config struct {
	NodeID string // lease owner recorded on claims; default host-pid-random

	Online  PoolConfig // default: 32×CPU workers, capacity 10000
	Offline PoolConfig // default: 8×CPU workers, capacity 10000

	LeaseTTL          time.Duration // default 30s
	HeartbeatInterval time.Duration // default LeaseTTL/3
	RecoveryInterval  time.Duration // default 5s
	// Retention: tasks finished longer ago are deleted by the cleaner
	// (with their input, events, evidence and idempotency binding);
	// default 168h; defaults.Unlimited (< 0) keeps them and runs no
	// cleaner. CleanerInterval is the cleaner's period; default 1m.
	Retention       time.Duration
	CleanerInterval time.Duration
	// VacuumInterval is how often the vacuum scheduler looks whether the
	// live table needs a vacuum, on a store that vacuums
	// (store.Vacuumer: PostgreSQL); default 5s, negative: never
	// (autovacuum alone).
	VacuumInterval   time.Duration
	DeadlineInterval time.Duration // default 1s
	// ScheduleInterval is the period of the schedule scheduler, which
	// fires the periodic schedules (default 250ms: a fire is admitted
	// within about that of its time); ScheduleBatch bounds the due
	// schedules one tick reads (default 100). ScheduleGrace is how late a
	// fire time may be handled and still count as on time; later, it is
	// missed, and the schedule's missed policy applies (default 10s).
	ScheduleInterval time.Duration
	ScheduleBatch    int
	ScheduleGrace    time.Duration
	// BulkInterval is the period of the bulk scheduler, which advances the
	// bulk jobs (default 500ms); each tick runs up to BulkBatches batches
	// (default 100) of BulkBatch tasks (default 1000), BulkPause apart
	// (default 10ms), under a lease of BulkLeaseTTL (default 30s). While
	// this node admits submissions (one in the last second), a batch takes
	// BulkBusyBatch tasks instead (default 100, at most BulkBatch), so
	// that a bulk job yields to them (see BulkScheduler).
	BulkInterval  time.Duration
	BulkBatch     int
	BulkBusyBatch int
	BulkBatches   int
	BulkPause     time.Duration
	BulkLeaseTTL  time.Duration
	PollInterval  time.Duration // fallback claim poll when idle; default 1s
	// WorkerFlushInterval is how often the node writes the remote workers
	// it saw to the store (GET /v1/admin/workers); default 2s.
	WorkerFlushInterval time.Duration

	DefaultTimeout     time.Duration // deadline of tasks that name none; default 10m
	MaxTimeout         time.Duration // largest timeout a submission may ask; default 24h
	MaxScheduleAhead   time.Duration // how far ahead run_at may be; default 30 days
	DefaultMaxAttempts int           // default 3
	MaxAttemptsLimit   int           // largest max_attempts a submission may ask; default 25

	ClaimBatch int // most tasks one claim takes (claims are also sized by free workers); default 1000
	AdmitBatch int // most submissions one admission transaction takes; default 128
	// AdmitCommitters is how many admission transactions may run at once
	// (group commit pipelined); default 1. More helps only a database that
	// takes concurrent writers (PostgreSQL), not SQLite's single writer.
	AdmitCommitters int
	FinishBatch     int           // most outcomes one finish transaction takes; default 1000
	ScanBatch       int           // rows per recovery/deadline batch; default 500
	ScanBatches     int           // most recovery/deadline batches per tick; default 20
	ScanPause       time.Duration // pause between two batches of one tick; default 50ms
	HeartbeatBatch  int           // leases per heartbeat statement batch; default 1000
	QueryTimeout    time.Duration // per store call (API, admission, pools, completers, schedulers); default 10s
	// MaxResultBytes bounds a workflow's result: a larger one fails the
	// task with result_too_large (not retried). Default 1 MiB.
	MaxResultBytes int
	// StorageQuota is the bytes a tenant without its own quota may keep
	// (inputs, results, evidence; see docs/limits.md): a submission whose
	// input would take it over is refused with storage_quota_exceeded.
	// Default 1 GiB; Unlimited (-1) lifts it.
	StorageQuota int64

	RetryBackoffBase time.Duration // first retry delay; default 1s
	RetryBackoffMax  time.Duration // default 5m
	ShutdownGrace    time.Duration // how long Stop lets running tasks finish; default 10s
	ShutdownAbandon  time.Duration // how long Stop then waits for cancelled tasks before abandoning them; default 5s
	// ShutdownFlush is how long Stop keeps retrying, with backoff, the
	// outcomes and hand-backs the database refused for a passing reason
	// (down, out of connections, slow) before it gives them up and lets
	// their leases lapse; default 5s.
	ShutdownFlush time.Duration
	RetryAfter    time.Duration // Retry-After on 429 answers; default 1s
	// ReadyProbeInterval is how often Ready writes its probe row when the
	// store has one (store.WriteProber), so that failing writes show on an
	// idle node; default 10s. While writes fail it probes every second.
	ReadyProbeInterval time.Duration

	Clock clockwork.Clock // default real clock
	// SyncClock corrects Clock by its offset to the store's clock
	// (store DatabaseTime), measured at Start and every ClockSyncInterval
	// (default 30s): for nodes that share a database. Leave it off when
	// the store's clock is this process's (SQLite) or Clock is a fake.
	SyncClock         bool
	ClockSyncInterval time.Duration
	Logger            *slog.Logger     // default slog.Default()
	Metrics           *metrics.Metrics // default a fresh set
	// TracerProvider receives the queue's spans (package tracing):
	// admission, each task's wait in the queue, in-process runs and
	// fenced finishes. nil or a no-op provider: none, at no cost.
	TracerProvider trace.TracerProvider

	noJitter bool // tests: start schedulers without the staggered first tick
}

func (c *Config) setDefaults() error {
	cpus := runtime.NumCPU()
	if c.NodeID == "" {
		host, _ := os.Hostname()
		c.NodeID = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), uuid.NewString()[:8])
	}
	def := func(p *PoolConfig, workers int) {
		switch {
		case p.Workers < 0: // NoWorkers
			p.Workers = 0
		case p.Workers == 0:
			p.Workers = workers
		}
		if p.Capacity == 0 {
			p.Capacity = defaults.Capacity
		} // < 0: Unlimited, as the store reads it
	}
	def(&c.Online, defaults.OnlineWorkersPerCPU*cpus)
	def(&c.Offline, defaults.OfflineWorkersPerCPU*cpus)
	setDur(&c.LeaseTTL, defaults.LeaseTTL)
	setDur(&c.MaxScheduleAhead, 30*24*time.Hour)
	setDur(&c.HeartbeatInterval, defaults.HeartbeatInterval(c.LeaseTTL))
	setDur(&c.RecoveryInterval, defaults.RecoveryInterval)
	if c.Retention == 0 {
		c.Retention = defaults.Retention
	} // < 0: Unlimited, no cleaner
	setDur(&c.CleanerInterval, defaults.CleanerInterval)
	if c.VacuumInterval == 0 {
		c.VacuumInterval = 5 * time.Second
	}
	setDur(&c.DeadlineInterval, defaults.DeadlineInterval)
	setDur(&c.ScheduleInterval, defaults.ScheduleInterval)
	setInt(&c.ScheduleBatch, 100)
	setDur(&c.ScheduleGrace, defaults.ScheduleGrace)
	setDur(&c.BulkInterval, 500*time.Millisecond)
	setInt(&c.BulkBatch, 1000)
	setInt(&c.BulkBusyBatch, 100)
	c.BulkBusyBatch = min(c.BulkBusyBatch, c.BulkBatch)
	setInt(&c.BulkBatches, 100)
	setDur(&c.BulkPause, 10*time.Millisecond)
	setDur(&c.BulkLeaseTTL, 30*time.Second)
	setDur(&c.PollInterval, time.Second)
	setDur(&c.WorkerFlushInterval, 2*time.Second)
	setDur(&c.DefaultTimeout, defaults.DefaultTimeout)
	setDur(&c.MaxTimeout, 24*time.Hour)
	setInt(&c.DefaultMaxAttempts, 3)
	setInt(&c.MaxAttemptsLimit, 25)
	setInt(&c.ClaimBatch, 1000)
	setInt(&c.AdmitBatch, 128)
	setInt(&c.FinishBatch, 1000)
	setInt(&c.ScanBatch, 500)
	setInt(&c.ScanBatches, 20)
	setDur(&c.ScanPause, 50*time.Millisecond)
	setInt(&c.HeartbeatBatch, 1000)
	setDur(&c.QueryTimeout, 10*time.Second)
	setInt(&c.MaxResultBytes, defaults.MaxResultBytes)
	if c.StorageQuota == 0 {
		c.StorageQuota = defaults.TenantStorageQuota
	} // < 0: Unlimited, as the store reads it
	setDur(&c.RetryBackoffBase, time.Second)
	setDur(&c.RetryBackoffMax, 5*time.Minute)
	setDur(&c.ShutdownGrace, defaults.ShutdownGrace)
	setDur(&c.ShutdownAbandon, 5*time.Second)
	setDur(&c.ShutdownFlush, 5*time.Second)
	setDur(&c.RetryAfter, time.Second)
	setDur(&c.ReadyProbeInterval, 10*time.Second)
	setDur(&c.ClockSyncInterval, 30*time.Second)
	if c.Clock == nil {
		c.Clock = clockwork.NewRealClock()
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Metrics == nil {
		c.Metrics = metrics.New()
	}
	if c.HeartbeatInterval >= c.LeaseTTL {
		return fmt.Errorf("queue: heartbeat interval %s must be shorter than the lease TTL %s", c.HeartbeatInterval, c.LeaseTTL)
	}
	if c.DefaultTimeout > c.MaxTimeout {
		return fmt.Errorf("queue: default timeout %s exceeds the max timeout %s", c.DefaultTimeout, c.MaxTimeout)
	}
	return nil
}

func (c *Config) pool(p dockettype.Pool) PoolConfig {
	if p == dockettype.PoolOffline {
		return c.Offline
	}
	return c.Online
}

func setDur(d *time.Duration, v time.Duration) {
	if *d <= 0 {
		*d = v
	}
}

func setInt(i *int, v int) {
	if *i <= 0 {
		*i = v
	}
}
