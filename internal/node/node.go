package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/jonboulle/clockwork"
	"go.opentelemetry.io/otel"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/auth"
	"github.com/docket-dev/docket/internal/defaults"
	"github.com/docket-dev/docket/internal/httpapi"
	"github.com/docket-dev/docket/internal/inprocess"
	"github.com/docket-dev/docket/internal/metrics"
	"github.com/docket-dev/docket/internal/queue"
	"github.com/docket-dev/docket/internal/remote"
	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/store/storeopen"
	"github.com/docket-dev/docket/internal/tracing/otlp"
)

// KeyCacheTTL is how long a node remembers an API key it resolved: a key
// revoked elsewhere is refused on every node within it.
const KeyCacheTTL = 2 * time.Second

// Node is one Docket node: its store, the ExecutionService (pools and
// schedulers) over the in-process and remote runtimes, and the HTTP API
// (with the worker API).
type Node struct {
	cfg     Config
	version string
	store   store.Store
	svc     *queue.Service
	http    *http.Server
	ln      net.Listener
	log     *slog.Logger
	metrics *metrics.Metrics
	clock   clockwork.Clock
	tracing *otlp.Provider // nil when Options.TracerProvider was given

	listening chan struct{} // closed once Start has opened the listener
}

// New opens the store (applying migrations), registers the mode's
// workflows and builds the ExecutionService and the HTTP API. It starts
// nothing.
func New(ctx context.Context, cfg Config, opts Options) (*Node, error) {
	cfg.setDefaults()
	if err := cfg.check(); err != nil {
		return nil, err
	}
	cfg.MaxConnections = fitMaxConnections(cfg.MaxConnections, cfg.Logger)
	if opts.Version == "" {
		opts.Version = "devel"
	}
	st, err := storeopen.Open(ctx, cfg.DB, storeopen.Options{SQLiteSynchronous: cfg.SQLiteSynchronous,
		AllowForeignDatabase: cfg.AllowForeignDatabase})
	if err != nil {
		return nil, err
	}
	var tp *otlp.Provider
	if opts.TracerProvider == nil {
		if tp, err = otlp.FromEnv(ctx, opts.Version); err != nil {
			st.Close()
			return nil, err
		}
		opts.TracerProvider = tp
	}
	n, err := assemble(ctx, cfg, opts, st)
	if err != nil {
		if tp != nil {
			_ = tp.Shutdown(ctx)
		}
		st.Close()
		return nil, err
	}
	n.tracing = tp
	if tp.Enabled() {
		otel.SetErrorHandler(&tracingErrors{log: n.log, failed: n.metrics.TracingExportFailed, clock: n.clock})
		n.log.Info("tracing on: spans are exported with OTLP")
	}
	return n, nil
}

// assemble builds a node on an open store.
func assemble(ctx context.Context, cfg Config, opts Options, st store.Store) (*Node, error) {
	clock := newClock(opts.ClockOffset)
	n := &Node{cfg: cfg, version: opts.Version, store: st, log: cfg.Logger, metrics: metrics.New(), clock: clock,
		listening: make(chan struct{})}
	provider, err := registerWorkflows(ctx, &cfg, st, clock)
	if err != nil {
		return nil, err
	}
	// Workflows compiled in first, then those an admin registered for
	// remote workers.
	rt := remote.New(inprocess.New(cfg.Workflows, provider), st, provider, clock)
	qcfg := cfg.queueConfig(clock, n.metrics)
	qcfg.TracerProvider = opts.TracerProvider
	n.svc, err = queue.New(st, rt, qcfg)
	if err != nil {
		return nil, err
	}
	n.observePools()
	n.observeQueue()
	api := cfg.apiOptions(clock, n.metrics, opts.Version)
	api.MaxTimeout = n.svc.Config().MaxTimeout
	api.Admin, api.Node = st, n.svc
	api.Remote, api.Workflows, api.LeaseTTL = n.svc, rt, n.svc.Config().LeaseTTL
	api.Schedules = n.svc
	api.TracerProvider = opts.TracerProvider
	api.Failures = n.svc
	api.Schedules, api.Flow = n.svc, n.svc
	handler := httpapi.New(n.svc, auth.NewAuthenticator(st).WithCache(KeyCacheTTL, clock), api)
	n.http = httpapi.NewServer(handler, slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn))
	return n, nil
}

// Bootstrap creates tenant "demo" on first start and returns a new API key
// for it; on later starts it returns "" (the key was shown once).
func (n *Node) Bootstrap(ctx context.Context) (string, error) {
	created, err := n.store.EnsureTenant(ctx, &store.EnsureTenantParams{
		Now: n.clock.Now(), ID: "demo", DefaultMaxInFlight: defaults.StoredTenantLimit(n.cfg.DefaultTenantLimit),
	})
	if err != nil || !created {
		return "", err
	}
	key, _, err := auth.CreateKey(ctx, n.store, n.clock.Now(), "demo", "demo", dockettype.RoleAdmin)
	return key, err
}

// Start starts the pools, schedulers and the HTTP listener.
func (n *Node) Start(ctx context.Context) error {
	ln, err := net.Listen("tcp", n.cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", n.cfg.Listen, err)
	}
	if err := n.svc.Start(ctx); err != nil {
		ln.Close()
		return err
	}
	lim := httpapi.NewConnLimiter(ln, httpapi.ConnLimits{Max: n.cfg.MaxConnections, PerIP: n.cfg.MaxConnectionsPerIP,
		Open: n.metrics.HTTPConnections, Shed: n.metrics.HTTPConnsShed})
	lim.Attach(n.http)
	ln = lim
	n.ln = ln
	close(n.listening)
	go func() {
		if err := n.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			n.log.Error("http server stopped", "code", dockettype.CodeInternal)
		}
	}()
	n.log.Info("docket started", "addr", ln.Addr().String(), "mode", n.cfg.Mode, "version", n.version,
		"max_connections", n.cfg.MaxConnections, "max_connections_per_ip", n.cfg.MaxConnectionsPerIP)
	return nil
}

// Listening is closed once the node listens: Addr and URL are then set.
func (n *Node) Listening() <-chan struct{} { return n.listening }

// Addr is the address the node listens on (after Start).
func (n *Node) Addr() string {
	if n.ln == nil {
		return ""
	}
	return n.ln.Addr().String()
}

// URL is the node's base URL (after Start).
func (n *Node) URL() string { return "http://" + n.Addr() }

// Mode is the node's mode, ModeDemo or ModePilot.
func (n *Node) Mode() string { return n.cfg.Mode }

// Shutdown stops accepting requests, drains in-flight ones, stops the
// ExecutionService (running tasks get the shutdown grace period) and closes
// the store.
func (n *Node) Shutdown(ctx context.Context) error {
	n.svc.Drain() // long polls answer now instead of holding the shutdown
	err := n.http.Shutdown(ctx)
	n.svc.Stop()
	// The last spans (the finishes written by Stop) are exported within
	// what is left of ctx, the shutdown grace's bound.
	if terr := n.tracing.Shutdown(ctx); terr != nil {
		n.log.Warn("tracing: spans not all exported at shutdown", "code", dockettype.CodeInternal)
	}
	if cerr := n.store.Close(); err == nil {
		err = cerr
	}
	n.log.Info("docket stopped")
	return err
}

// Close releases the store of a node that was never started.
func (n *Node) Close() error {
	_ = n.tracing.Shutdown(context.Background())
	return n.store.Close()
}

// Run starts the node and serves until ctx is cancelled, then shuts down.
func (n *Node) Run(ctx context.Context) error {
	if err := n.Start(ctx); err != nil {
		n.Close()
		return err
	}
	<-ctx.Done()
	return n.Stop()
}

// Stop shuts the node down (see Shutdown), allowing the shutdown grace
// period plus 10 s for in-flight requests and tasks.
func (n *Node) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), n.svc.Config().ShutdownGrace+10*time.Second)
	defer cancel()
	return n.Shutdown(ctx)
}
