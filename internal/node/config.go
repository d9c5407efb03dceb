package node

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/jonboulle/clockwork"
	"go.opentelemetry.io/otel/trace"

	"github.com/docket-dev/docket/internal/defaults"
	"github.com/docket-dev/docket/internal/dsn"
	"github.com/docket-dev/docket/internal/httpapi"
	"github.com/docket-dev/docket/internal/metrics"
	"github.com/docket-dev/docket/internal/queue"
	"github.com/docket-dev/docket/workflow"
)

// Modes.
const (
	ModeDemo  = "demo"  // frozen seed rules, demo workflows enabled
	ModePilot = "pilot" // requires a published rule set version; demo workflows disabled
)

// Config is docket.Config, field for field (the public package converts
// one into the other, so the two cannot drift apart: see docket.Config for
// each field's meaning). Zero values take the defaults of package
// defaults; defaults.Unlimited lifts a limit, defaults.NoWorkers leaves a
// pool without workers on this node.
type Config struct {
	DB     string
	Listen string
	Mode   string

	OnlineWorkers, OfflineWorkers   int
	OnlineCapacity, OfflineCapacity int

	LeaseTTL          time.Duration
	HeartbeatInterval time.Duration
	RecoveryInterval  time.Duration
	DeadlineInterval  time.Duration
	Retention         time.Duration
	CleanerInterval   time.Duration
	ScheduleInterval  time.Duration
	DefaultTimeout    time.Duration
	ShutdownGrace     time.Duration

	MaxBodyBytes         int64
	MaxBatchBytes        int64
	MaxResultBytes       int
	SQLiteSynchronous    string
	AllowForeignDatabase bool

	DefaultTenantLimit          int
	TenantStorageQuota          int64
	MaxConnections              int
	BodyTimeout                 time.Duration
	MaxWaits, MaxWaitsPerTenant int
	MaxConnectionsPerIP         int
	MaxBodyMemory               int64

	NoDemoWorkflows bool

	Workflows *workflow.Registry

	Logger *slog.Logger
}

// Options are the settings of Docket's own tools, which docket.Config does
// not offer.
type Options struct {
	// Version is reported by GET /healthz and the start-up log line;
	// default "devel".
	Version string
	// ClockOffset shifts this node's clock: `docket faultcheck --scenario
	// clock-skew` runs a node whose clock is ahead (serve's hidden
	// --clock-offset). Fault testing only.
	ClockOffset time.Duration
	// TracerProvider receives the node's spans (the HTTP API's and the
	// queue's). nil: the node sets tracing up from the OTEL_* variables
	// (package tracing/otlp), off when no OTLP endpoint is set, and
	// flushes it when it stops. Tests pass an in-memory one.
	TracerProvider trace.TracerProvider
}

// setDefaults fills what the node itself reads; the queue and the HTTP
// API fill the rest of their settings from the same table.
func (c *Config) setDefaults() {
	if c.DB == "" {
		c.DB = defaults.DB
	}
	if c.Listen == "" {
		c.Listen = defaults.Listen
	}
	if c.Mode == "" {
		c.Mode = defaults.Mode
	}
	if c.Logger == nil {
		c.Logger = NewLogger(os.Stderr)
	}
	if c.Workflows == nil {
		c.Workflows = workflow.NewRegistry()
	}
	if c.MaxConnections == 0 {
		c.MaxConnections = defaults.MaxConnections
	}
	if c.MaxConnectionsPerIP == 0 {
		c.MaxConnectionsPerIP = defaults.MaxConnectionsPerIP
	}
}

// check refuses settings that have no meaning.
func (c *Config) check() error {
	var errs []error
	if c.Mode != ModeDemo && c.Mode != ModePilot {
		errs = append(errs, fmt.Errorf("mode must be %q or %q, not %q", ModeDemo, ModePilot, c.Mode))
	}
	if c.MaxConnections < 0 {
		errs = append(errs, fmt.Errorf("max connections must be 0 (the default, %d) or more, not %d", defaults.MaxConnections, c.MaxConnections))
	}
	return errors.Join(errs...)
}

// queueConfig is the ExecutionService's part of the settings.
func (c *Config) queueConfig(clock clockwork.Clock, m *metrics.Metrics) queue.Config {
	return queue.Config{
		Online:            queue.PoolConfig{Workers: c.OnlineWorkers, Capacity: c.OnlineCapacity},
		Offline:           queue.PoolConfig{Workers: c.OfflineWorkers, Capacity: c.OfflineCapacity},
		LeaseTTL:          c.LeaseTTL,
		HeartbeatInterval: c.HeartbeatInterval,
		RecoveryInterval:  c.RecoveryInterval,
		DeadlineInterval:  c.DeadlineInterval,
		Retention:         c.Retention,
		CleanerInterval:   c.CleanerInterval,
		ScheduleInterval:  c.ScheduleInterval,
		DefaultTimeout:    c.DefaultTimeout,
		ShutdownGrace:     c.ShutdownGrace,
		MaxResultBytes:    c.MaxResultBytes,
		StorageQuota:      c.TenantStorageQuota,
		Clock:             clock,
		// Nodes sharing PostgreSQL judge leases and deadlines by its clock.
		SyncClock:       dsn.IsPostgres(c.DB),
		AdmitCommitters: defaults.AdmitCommitters(c.DB),
		Logger:          c.Logger,
		Metrics:         m,
	}
}

// apiOptions is the HTTP API's part of the settings. The service gives the
// API its bound on timeouts, the admin store and the node's statistics.
func (c *Config) apiOptions(clock clockwork.Clock, m *metrics.Metrics, version string) httpapi.Options {
	return httpapi.Options{
		MaxBodyBytes:       c.MaxBodyBytes,
		MaxBatchBodyBytes:  c.MaxBatchBytes,
		Logger:             c.Logger,
		Metrics:            m,
		Clock:              clock,
		Version:            version,
		BodyTimeout:        c.BodyTimeout,
		MaxWaits:           c.MaxWaits,
		MaxWaitsPerTenant:  c.MaxWaitsPerTenant,
		MaxBodyMemory:      c.MaxBodyMemory,
		DefaultTenantLimit: c.DefaultTenantLimit,
		// The API shows the quota the queue enforces.
		DefaultStorageQuota: c.TenantStorageQuota,
	}
}
