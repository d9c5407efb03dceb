package docket

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/auth"
	"github.com/docket-dev/docket/internal/demo"
	"github.com/docket-dev/docket/internal/dsn"
	"github.com/docket-dev/docket/internal/httpapi"
	"github.com/docket-dev/docket/internal/metrics"
	"github.com/docket-dev/docket/internal/quality"
	"github.com/docket-dev/docket/internal/queue"
	"github.com/docket-dev/docket/internal/remote"
	"github.com/docket-dev/docket/internal/runtime"
	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/store/storeopen"
	"github.com/docket-dev/docket/workflow"
)

// DefaultRetention is how long finished tasks are kept by default.
const DefaultRetention = 7 * 24 * time.Hour

// retention maps Config.Retention to the queue's (0 there: keep forever).
func retention(d time.Duration) time.Duration {
	switch {
	case d == 0:
		return DefaultRetention
	case d < 0:
		return 0
	}
	return d
}

// KeyCacheTTL is how long a node remembers an API key it resolved: a key
// revoked elsewhere is refused on every node within it.
const KeyCacheTTL = 2 * time.Second

// Modes.
const (
	ModeDemo  = "demo"  // frozen seed rules, demo workflows enabled
	ModePilot = "pilot" // requires a published rule set version; demo workflows disabled
)

// Config configures a Server. Zero values take the documented defaults.
type Config struct {
	DB     string // SQLite file path, or a postgres:// URL; default ./docket.db
	Listen string // HTTP address; default 127.0.0.1:8080
	Mode   string // demo (default) or pilot

	OnlineWorkers, OfflineWorkers   int // per node; 0: sensible for the CPU count; -1: none
	OnlineCapacity, OfflineCapacity int // most non-terminal tasks per pool; default 10000

	LeaseTTL          time.Duration // default 30s
	HeartbeatInterval time.Duration // default LeaseTTL/3
	RecoveryInterval  time.Duration // default 5s
	DeadlineInterval  time.Duration // default 1s
	// Retention: tasks finished longer ago are deleted with their input,
	// events, evidence and idempotency binding. 0: the default, 168h; < 0:
	// keep them forever. CleanerInterval is the cleaner's period (1m).
	Retention       time.Duration
	CleanerInterval time.Duration
	DefaultTimeout  time.Duration // default 10m
	ShutdownGrace   time.Duration // default 10s

	MaxBodyBytes  int64 // default 1 MiB; also bounds each task of a batch
	MaxBatchBytes int64 // body of POST /v1/tasks/batch; default 16 MiB
	// MaxResultBytes bounds a workflow's result: a larger one fails the
	// task with result_too_large. Default 1 MiB.
	MaxResultBytes    int
	SQLiteSynchronous string // full (default) or normal

	// DefaultTenantLimit is the in-flight limit of a tenant created on
	// first use (the demo tenant, a tenant the admin API creates); tenants
	// that exist keep theirs. 0: DefaultTenantLimit; < 0: unlimited.
	DefaultTenantLimit int
	// MaxConnections bounds open client connections; 0: 4096. It is
	// lowered to fit the process's open-file limit.
	MaxConnections int
	// BodyTimeout is how long a client has to send a request body once
	// its headers are in; default 30s.
	BodyTimeout time.Duration
	// MaxWaits and MaxWaitsPerTenant bound the long polls (?wait=) held
	// at once; default 1000 and 100; < 0: no bound.
	MaxWaits, MaxWaitsPerTenant int

	// ClockOffset shifts this node's clock (fault testing only: `docket
	// faultcheck --scenario clock-skew` runs a node whose clock is ahead).
	// Leave it 0.
	ClockOffset time.Duration

	// Workflows holds the embedder's own workflows; built-ins are added to
	// it. Nil means built-ins only.
	Workflows *workflow.Registry

	Logger *slog.Logger // default: JSON to stderr
}

// Server is a running Docket node.
type Server struct {
	cfg     Config
	store   store.Store
	svc     *queue.Service
	http    *http.Server
	ln      net.Listener
	log     *slog.Logger
	metrics *metrics.Metrics
	clock   clockwork.Clock

	listening chan struct{} // closed once Start has opened the listener
}

// DefaultTenantLimit is the in-flight limit of a tenant created on first
// use when Config.DefaultTenantLimit is 0.
const DefaultTenantLimit = 1000

// reservedFiles are the open files kept for the store, logs and the
// listener when MaxConnections is fitted to the open-file limit.
const reservedFiles = 256

// ErrNoPublishedRules is returned by New in pilot mode when no rule set
// version has been published (see `docket rules publish`).
var ErrNoPublishedRules = errors.New("pilot mode needs a published rule set version: run `docket rules publish FILE` first")

// New opens the store (applying migrations), builds the runtime for the
// mode and the ExecutionService. It starts nothing.
func New(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.DB == "" {
		cfg.DB = "./docket.db"
	}
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:8080"
	}
	if cfg.Mode == "" {
		cfg.Mode = ModeDemo
	}
	if cfg.Logger == nil {
		cfg.Logger = NewLogger(os.Stderr)
	}
	if cfg.Workflows == nil {
		cfg.Workflows = workflow.NewRegistry()
	}
	switch {
	case cfg.DefaultTenantLimit == 0:
		cfg.DefaultTenantLimit = DefaultTenantLimit
	case cfg.DefaultTenantLimit < 0:
		cfg.DefaultTenantLimit = 0 // unlimited, as the store spells it
	}
	if cfg.MaxConnections <= 0 {
		cfg.MaxConnections = httpapi.DefaultMaxConnections
	}
	if limit, ok := openFileLimit(); ok && uint64(cfg.MaxConnections)+reservedFiles > limit {
		fitted := max(int(limit)-reservedFiles, int(limit/2), 1)
		cfg.Logger.Warn("max connections lowered to fit the open-file limit",
			"max_connections", fitted, "asked", cfg.MaxConnections, "open_file_limit", limit)
		cfg.MaxConnections = fitted
	}
	st, err := storeopen.Open(ctx, cfg.DB, storeopen.Options{SQLiteSynchronous: cfg.SQLiteSynchronous})
	if err != nil {
		return nil, err
	}
	clock := newClock(cfg.ClockOffset)
	s := &Server{cfg: cfg, store: st, log: cfg.Logger, metrics: metrics.New(), clock: clock, listening: make(chan struct{})}
	var provider quality.Provider
	switch cfg.Mode {
	case ModeDemo:
		provider = quality.NewSeedProvider()
		if err := demo.Register(cfg.Workflows, clock); err != nil {
			st.Close()
			return nil, err
		}
	case ModePilot:
		provider = quality.NewPublishedProvider(st)
		if _, err := provider.CurrentVersion(ctx); err != nil {
			st.Close()
			if errors.Is(err, quality.ErrNoPublishedVersion) {
				return nil, ErrNoPublishedRules
			}
			return nil, fmt.Errorf("pilot mode: read the published rule set: %w", err)
		}
	default:
		st.Close()
		return nil, fmt.Errorf("mode must be %q or %q, not %q", ModeDemo, ModePilot, cfg.Mode)
	}
	if err := quality.Register(cfg.Workflows, provider); err != nil {
		st.Close()
		return nil, err
	}
	// Workflows compiled in first, then those an admin registered for
	// remote workers.
	rt := remote.New(runtime.New(cfg.Workflows, provider), st, provider, clock)
	s.svc, err = queue.New(st, rt, queue.Config{
		Online:            queue.PoolConfig{Workers: cfg.OnlineWorkers, Capacity: cfg.OnlineCapacity},
		Offline:           queue.PoolConfig{Workers: cfg.OfflineWorkers, Capacity: cfg.OfflineCapacity},
		LeaseTTL:          cfg.LeaseTTL,
		HeartbeatInterval: cfg.HeartbeatInterval,
		RecoveryInterval:  cfg.RecoveryInterval,
		DeadlineInterval:  cfg.DeadlineInterval,
		Retention:         retention(cfg.Retention),
		CleanerInterval:   cfg.CleanerInterval,
		DefaultTimeout:    cfg.DefaultTimeout,
		ShutdownGrace:     cfg.ShutdownGrace,
		MaxResultBytes:    cfg.MaxResultBytes,
		Clock:             clock,
		// Nodes sharing PostgreSQL judge leases and deadlines by its clock.
		SyncClock:       IsPostgresURL(cfg.DB),
		AdmitCommitters: AdmitCommitters(cfg.DB),
		Logger:          cfg.Logger,
		Metrics:         s.metrics,
	})
	if err != nil {
		st.Close()
		return nil, err
	}
	s.metrics.ObservePools(func() []metrics.PoolWorkers {
		stats := s.svc.WorkerStats()
		out := make([]metrics.PoolWorkers, len(stats))
		for i, st := range stats {
			out[i] = metrics.PoolWorkers{Pool: st.Pool, Workers: st.Workers, Busy: st.Busy}
		}
		return out
	})
	s.observeQueue()
	handler := httpapi.New(s.svc, auth.NewAuthenticator(st).WithCache(KeyCacheTTL, clock), httpapi.Options{
		MaxBodyBytes: cfg.MaxBodyBytes, MaxBatchBodyBytes: cfg.MaxBatchBytes,
		Logger: cfg.Logger, Metrics: s.metrics, Clock: clock,
		Version: Version(), BodyTimeout: cfg.BodyTimeout,
		MaxWaits: cfg.MaxWaits, MaxWaitsPerTenant: cfg.MaxWaitsPerTenant,
		MaxTimeout: s.svc.Config().MaxTimeout,
		Admin:      st, Node: s.svc, DefaultTenantLimit: cfg.DefaultTenantLimit,
		Remote: s.svc, Workflows: rt, LeaseTTL: s.svc.Config().LeaseTTL,
	})
	s.http = httpapi.NewServer(handler, slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn))
	return s, nil
}

// Bootstrap creates tenant "demo" on first start and returns a new API key
// for it; on later starts it returns "" (the key was shown once).
func (s *Server) Bootstrap(ctx context.Context) (string, error) {
	created, err := s.store.EnsureTenant(ctx, &store.EnsureTenantParams{
		Now: s.clock.Now(), ID: "demo", DefaultMaxInFlight: s.cfg.DefaultTenantLimit,
	})
	if err != nil || !created {
		return "", err
	}
	key, _, err := auth.CreateKey(ctx, s.store, s.clock.Now(), "demo", "demo", dockettype.RoleAdmin)
	return key, err
}

// Start starts the pools, schedulers and the HTTP listener.
func (s *Server) Start(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", s.cfg.Listen, err)
	}
	if err := s.svc.Start(ctx); err != nil {
		ln.Close()
		return err
	}
	ln = httpapi.LimitListener(ln, s.cfg.MaxConnections, s.metrics.HTTPConnections)
	s.ln = ln
	close(s.listening)
	go func() {
		if err := s.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("http server stopped", "code", dockettype.CodeInternal)
		}
	}()
	s.log.Info("docket started", "addr", ln.Addr().String(), "mode", s.cfg.Mode, "version", Version(),
		"max_connections", s.cfg.MaxConnections)
	return nil
}

// Listening is closed once the server listens: Addr and URL are then set.
// A program that calls Run on a goroutine waits on it before it uses URL.
func (s *Server) Listening() <-chan struct{} { return s.listening }

// Addr is the address the server listens on (after Start).
func (s *Server) Addr() string {
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// URL is the server's base URL (after Start).
func (s *Server) URL() string { return "http://" + s.Addr() }

// Shutdown stops accepting requests, drains in-flight ones, stops the
// ExecutionService (running tasks get the shutdown grace period) and closes
// the store.
func (s *Server) Shutdown(ctx context.Context) error {
	s.svc.Drain() // long polls answer now instead of holding the shutdown
	err := s.http.Shutdown(ctx)
	s.svc.Stop()
	if cerr := s.store.Close(); err == nil {
		err = cerr
	}
	s.log.Info("docket stopped")
	return err
}

// Close releases the store of a server that was never started.
func (s *Server) Close() error { return s.store.Close() }

// Run starts the server and serves until ctx is cancelled, then shuts down.
func (s *Server) Run(ctx context.Context) error {
	if err := s.Start(ctx); err != nil {
		s.store.Close()
		return err
	}
	<-ctx.Done()
	return s.Stop()
}

// Stop shuts the server down (see Shutdown), allowing the shutdown grace
// period plus 10 s for in-flight requests and tasks.
func (s *Server) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), s.svc.Config().ShutdownGrace+10*time.Second)
	defer cancel()
	return s.Shutdown(ctx)
}

// AdmitCommitters is how many admission transactions a node runs at once
// on db: two on PostgreSQL (the next group commit gathers while one
// commits), one on SQLite (one writer).
func AdmitCommitters(db string) int {
	if IsPostgresURL(db) {
		return 2
	}
	return 1
}

// IsPostgresURL reports whether db names a PostgreSQL database.
func IsPostgresURL(db string) bool { return dsn.IsPostgres(db) }

// RedactDB returns the database string db with every credential masked
// (a URL's password, password= and sslpassword= parameters): print or log
// it only this way.
func RedactDB(db string) string { return dsn.Redact(db) }
