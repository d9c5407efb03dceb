package docket

import (
	"context"
	"log/slog"
	"time"

	"github.com/docket-dev/docket/internal/node"
	"github.com/docket-dev/docket/workflow"
)

// Unlimited, given to a limit of Config (a pool's capacity,
// DefaultTenantLimit, TenantStorageQuota, MaxWaits, MaxWaitsPerTenant) or
// to Retention, lifts
// it. The CLI's flags spell it -1 too.
const Unlimited = -1

// NoWorkers, given to OnlineWorkers or OfflineWorkers, runs no workers for
// that pool on this node: it still admits tasks, which other nodes run.
const NoWorkers = -1

// Modes.
const (
	ModeDemo  = "demo"  // frozen seed rules, demo workflows enabled
	ModePilot = "pilot" // requires a published rule set version; demo workflows disabled
)

// ErrNoPublishedRules is returned by New in pilot mode when no rule set
// version has been published (see `docket rules publish`).
var ErrNoPublishedRules = node.ErrNoPublishedRules

// Config configures a Server. A zero value takes the default (the same
// `docket serve --help` shows); Unlimited lifts a limit, NoWorkers leaves a
// pool without workers on this node.
type Config struct {
	DB     string // SQLite file path, or a postgres:// URL; default ./docket.db
	Listen string // HTTP address; default 127.0.0.1:8080
	Mode   string // ModeDemo (default) or ModePilot

	OnlineWorkers, OfflineWorkers   int // per node; default 32 and 8 per CPU; NoWorkers: none
	OnlineCapacity, OfflineCapacity int // most non-terminal tasks per pool; default 10000; Unlimited: no bound

	LeaseTTL          time.Duration // default 30s
	HeartbeatInterval time.Duration // default LeaseTTL/3
	RecoveryInterval  time.Duration // default 5s
	DeadlineInterval  time.Duration // default 1s
	// Retention: tasks finished longer ago are deleted with their input,
	// events, evidence and idempotency binding; default 168h; Unlimited:
	// keep them forever. CleanerInterval is the cleaner's period (1m).
	Retention       time.Duration
	CleanerInterval time.Duration
	// ScheduleInterval is the period of the scheduler that fires the
	// periodic schedules (default 250ms).
	ScheduleInterval time.Duration
	DefaultTimeout   time.Duration // default 10m
	ShutdownGrace    time.Duration // default 10s

	MaxBodyBytes  int64 // default 1 MiB; also bounds each task of a batch
	MaxBatchBytes int64 // body of POST /v1/tasks/batch; default 16 MiB
	// MaxResultBytes bounds a workflow's result: a larger one fails the
	// task with result_too_large. Default 1 MiB.
	MaxResultBytes    int
	SQLiteSynchronous string // full (default) or normal
	// AllowForeignDatabase installs Docket's tables in a database (a
	// PostgreSQL schema) that holds other tables and no Docket migration
	// record; without it New refuses such a database.
	AllowForeignDatabase bool

	// DefaultTenantLimit is the in-flight limit of a tenant created on
	// first use (the demo tenant, a tenant the admin API creates); tenants
	// that exist keep theirs. Default 1000; Unlimited: none.
	DefaultTenantLimit int
	// TenantStorageQuota is the bytes a tenant without its own quota may
	// keep: the inputs, results and evidence of its tasks, finished ones
	// included until retention deletes them. A submission that would take
	// it over is refused (429 storage_quota_exceeded); see docs/limits.md.
	// Default 1 GiB; Unlimited: none.
	TenantStorageQuota int64
	// MaxConnections bounds open client connections; default 4096. It is
	// lowered to fit the process's open-file limit.
	MaxConnections int
	// BodyTimeout is how long a client has to send a request body once
	// its headers are in; default 30s.
	BodyTimeout time.Duration
	// MaxWaits and MaxWaitsPerTenant bound the long polls (?wait=) held
	// at once; default 1000 and 100; Unlimited: no bound.
	MaxWaits, MaxWaitsPerTenant int
	// MaxConnectionsPerIP bounds the open client connections of one remote
	// address; default 1024; Unlimited: no bound (behind a reverse proxy,
	// every client has its address).
	MaxConnectionsPerIP int
	// MaxBodyMemory bounds the bytes of request bodies read and decoded at
	// once; a body that does not fit is answered 429 too_many_requests
	// with Retry-After. Default 256 MiB; Unlimited: no bound.
	MaxBodyMemory int64

	// NoDemoWorkflows leaves out demo.echo, demo.sleep and demo.fail in
	// demo mode (pilot mode never has them): the seed rules and
	// quality.evaluate stay, beside the program's own workflows.
	NoDemoWorkflows bool

	// Workflows holds the embedder's own workflows; built-ins are added to
	// it. Nil means built-ins only.
	Workflows *workflow.Registry

	Logger *slog.Logger // default: NewLogger(os.Stderr)
}

// Server is a running Docket node.
type Server struct {
	n *node.Node
}

// New opens the store (applying migrations), registers the workflows of
// the mode and builds the ExecutionService and the HTTP API. It starts
// nothing. With OTEL_EXPORTER_OTLP_ENDPOINT (or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) set, the server exports
// OpenTelemetry spans with OTLP (docs/tracing.md); tracing is off
// otherwise.
func New(ctx context.Context, cfg Config) (*Server, error) {
	n, err := node.New(ctx, node.Config(cfg), node.Options{Version: Version()})
	if err != nil {
		return nil, err
	}
	return &Server{n: n}, nil
}

// Bootstrap creates tenant "demo" on first start and returns a new API key
// for it; on later starts it returns "" (the key was shown once).
func (s *Server) Bootstrap(ctx context.Context) (string, error) { return s.n.Bootstrap(ctx) }

// Start starts the pools, schedulers and the HTTP listener.
func (s *Server) Start(ctx context.Context) error { return s.n.Start(ctx) }

// Listening is closed once the server listens: Addr and URL are then set.
// A program that calls Run on a goroutine waits on it before it uses URL.
func (s *Server) Listening() <-chan struct{} { return s.n.Listening() }

// Addr is the address the server listens on (after Start).
func (s *Server) Addr() string { return s.n.Addr() }

// URL is the server's base URL (after Start).
func (s *Server) URL() string { return s.n.URL() }

// Shutdown stops accepting requests, drains in-flight ones, stops the
// ExecutionService (running tasks get the shutdown grace period) and closes
// the store.
func (s *Server) Shutdown(ctx context.Context) error { return s.n.Shutdown(ctx) }

// Close releases the store of a server that was never started.
func (s *Server) Close() error { return s.n.Close() }

// Run starts the server and serves until ctx is cancelled, then shuts down.
func (s *Server) Run(ctx context.Context) error { return s.n.Run(ctx) }

// Stop shuts the server down (see Shutdown), allowing the shutdown grace
// period plus 10 s for in-flight requests and tasks.
func (s *Server) Stop() error { return s.n.Stop() }
