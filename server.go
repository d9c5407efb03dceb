package docket

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/auth"
	"github.com/docket-dev/docket/internal/demo"
	"github.com/docket-dev/docket/internal/httpapi"
	"github.com/docket-dev/docket/internal/metrics"
	"github.com/docket-dev/docket/internal/quality"
	"github.com/docket-dev/docket/internal/queue"
	"github.com/docket-dev/docket/internal/runtime"
	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/workflow"
)

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
	DefaultTimeout    time.Duration // default 10m
	ShutdownGrace     time.Duration // default 10s

	MaxBodyBytes      int64  // default 1 MiB; also bounds each task of a batch
	MaxBatchBytes     int64  // body of POST /v1/tasks/batch; default 16 MiB
	SQLiteSynchronous string // full (default) or normal

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
}

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
	st, err := OpenStore(ctx, cfg.DB, StoreOptions{SQLiteSynchronous: cfg.SQLiteSynchronous})
	if err != nil {
		return nil, err
	}
	clock := clockwork.NewRealClock()
	s := &Server{cfg: cfg, store: st, log: cfg.Logger, metrics: metrics.New(), clock: clock}
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
	s.svc, err = queue.New(st, runtime.New(cfg.Workflows, provider), queue.Config{
		Online:            queue.PoolConfig{Workers: cfg.OnlineWorkers, Capacity: cfg.OnlineCapacity},
		Offline:           queue.PoolConfig{Workers: cfg.OfflineWorkers, Capacity: cfg.OfflineCapacity},
		LeaseTTL:          cfg.LeaseTTL,
		HeartbeatInterval: cfg.HeartbeatInterval,
		RecoveryInterval:  cfg.RecoveryInterval,
		DeadlineInterval:  cfg.DeadlineInterval,
		DefaultTimeout:    cfg.DefaultTimeout,
		ShutdownGrace:     cfg.ShutdownGrace,
		Clock:             clock,
		Logger:            cfg.Logger,
		Metrics:           s.metrics,
	})
	if err != nil {
		st.Close()
		return nil, err
	}
	handler := httpapi.New(s.svc, auth.NewAuthenticator(st), httpapi.Options{
		MaxBodyBytes: cfg.MaxBodyBytes, MaxBatchBodyBytes: cfg.MaxBatchBytes,
		Logger: cfg.Logger, Metrics: s.metrics, Clock: clock,
	})
	s.http = &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn),
	}
	return s, nil
}

// Bootstrap creates tenant "demo" on first start and returns a new API key
// for it; on later starts it returns "" (the key was shown once).
func (s *Server) Bootstrap(ctx context.Context) (string, error) {
	created, err := s.store.EnsureTenant(ctx, &store.EnsureTenantParams{Now: s.clock.Now(), ID: "demo"})
	if err != nil || !created {
		return "", err
	}
	return auth.CreateKey(ctx, s.store, s.clock.Now(), "demo", "demo", dockettype.RoleAdmin)
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
	s.ln = ln
	go func() {
		if err := s.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("http server stopped", "code", dockettype.CodeInternal)
		}
	}()
	s.log.Info("docket started", "addr", ln.Addr().String(), "mode", s.cfg.Mode)
	return nil
}

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

// IsPostgresURL reports whether dsn names a PostgreSQL database.
func IsPostgresURL(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}
