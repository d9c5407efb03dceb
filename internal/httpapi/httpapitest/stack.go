package httpapitest

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/auth"
	"github.com/docket-dev/docket/internal/defaults"
	"github.com/docket-dev/docket/internal/demo"
	"github.com/docket-dev/docket/internal/httpapi"
	"github.com/docket-dev/docket/internal/inprocess"
	"github.com/docket-dev/docket/internal/logtest"
	"github.com/docket-dev/docket/internal/metrics"
	"github.com/docket-dev/docket/internal/quality"
	"github.com/docket-dev/docket/internal/queue"
	"github.com/docket-dev/docket/internal/remote"
	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/store/sqlite"
	"github.com/docket-dev/docket/workflow"
)

// The principal of Stack.Key.
const (
	Tenant    = "acme"
	Principal = "alice"
)

// Options adjusts the stack. The zero value gives a running stack with the
// queue's defaults, except a short shutdown grace and no retention
// cleaner, and an admin API that creates tenants without a limit.
type Options struct {
	// Queue configures the service. Logger and Metrics default to the
	// stack's.
	Queue queue.Config
	// API configures the handler. Logger and Metrics default to the
	// stack's, Tenants to its store.
	API httpapi.Options
	// Store, when set, is the store the stack runs on (see
	// ForEachDatabase) instead of a new SQLite database; the caller closes
	// it, after the stack.
	Store store.Store
	// WrapStore, when set, wraps the store the service and the
	// authenticator use (e.g. a faultstore.Store; see FailTasks).
	WrapStore func(store.Store) store.Store
	// KeyCacheTTL, when set, makes the authenticator cache resolved keys
	// for that long (auth.Authenticator.WithCache) on KeyCacheClock
	// (default the real clock).
	KeyCacheTTL   time.Duration
	KeyCacheClock clockwork.Clock
	// WrapRuntime, when set, wraps the demo runtime (e.g. to signal when a
	// task starts).
	WrapRuntime func(queue.Runtime) queue.Runtime
	// Quality registers quality.evaluate with the built-in seed rules, as
	// demo mode does (tasks then pin the seed version).
	Quality bool
}

// Stack is a running server over the real store, queue and runtime.
type Stack struct {
	URL     string // the server's base URL
	Server  *httptest.Server
	Store   store.Store // the real store, for setup (keys, tenant limits)
	Service *queue.Service
	Metrics *metrics.Metrics
	Key     string          // an API key of Tenant/Principal, role member
	Logs    *logtest.Buffer // set by New

	closers []func()
}

// New starts a stack for t in t.TempDir(), logging to a logtest logger
// (the test fails if a log line leaks a payload canary or SQL text), and
// closes it when t ends.
func New(t testing.TB, opts Options) *Stack {
	t.Helper()
	logger, logs := logtest.New(t)
	s, err := Start(context.Background(), t.TempDir(), logger, opts)
	if err != nil {
		t.Fatal(err)
	}
	s.Logs = logs
	t.Cleanup(s.Close)
	return s
}

// Start starts a stack with its database in dir. Close stops it.
func Start(ctx context.Context, dir string, logger *slog.Logger, opts Options) (_ *Stack, err error) {
	s := &Stack{}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if opts.Store != nil {
		s.Store = opts.Store
	} else {
		s.Store, err = sqlite.Open(ctx, filepath.Join(dir, "d.db"), sqlite.Options{Synchronous: "normal"})
		if err != nil {
			return nil, fmt.Errorf("open store: %w", err)
		}
		s.closers = append(s.closers, func() { _ = s.Store.Close() })
	}
	var st store.Store = s.Store
	if opts.WrapStore != nil {
		st = opts.WrapStore(st)
	}

	reg := workflow.NewRegistry()
	if err := demo.Register(reg, clockwork.NewRealClock()); err != nil {
		return nil, fmt.Errorf("register demo workflows: %w", err)
	}
	var provider quality.Provider
	if opts.Quality {
		provider = quality.NewSeedProvider()
		if err := quality.Register(reg, provider); err != nil {
			return nil, fmt.Errorf("register quality.evaluate: %w", err)
		}
	}
	// Built-in workflows, then the remote ones registered through the
	// admin API, as a node has them.
	remoteRT := remote.New(inprocess.New(reg, provider), st, provider, clockwork.NewRealClock())
	var rt queue.Runtime = remoteRT
	if opts.WrapRuntime != nil {
		rt = opts.WrapRuntime(rt)
	}

	cfg := opts.Queue
	if cfg.Logger == nil {
		cfg.Logger = logger
	}
	if cfg.ShutdownGrace == 0 {
		cfg.ShutdownGrace = 50 * time.Millisecond
	}
	if cfg.Retention == 0 {
		cfg.Retention = defaults.Unlimited
	}
	s.Service, err = queue.New(st, rt, cfg)
	if err != nil {
		return nil, fmt.Errorf("new service: %w", err)
	}
	if err := s.Service.Start(ctx); err != nil {
		return nil, fmt.Errorf("start service: %w", err)
	}
	s.closers = append(s.closers, s.Service.Stop)
	s.Metrics = s.Service.Metrics()

	s.Key, err = s.NewKey(ctx, Tenant, Principal)
	if err != nil {
		return nil, err
	}

	api := opts.API
	if api.Logger == nil {
		api.Logger = logger
	}
	if api.Metrics == nil {
		api.Metrics = s.Metrics
	}
	if api.Admin == nil {
		api.Admin = st
	}
	if api.Node == nil {
		api.Node = s.Service
	}
	if api.Remote == nil {
		api.Remote, api.Workflows, api.LeaseTTL = s.Service, remoteRT, s.Service.Config().LeaseTTL
	}
	if api.Schedules == nil {
		api.Schedules = s.Service
	}
	if api.Failures == nil {
		api.Failures = s.Service
	}
	if api.Flow == nil {
		api.Flow = s.Service
	}
	if api.DefaultTenantLimit == 0 {
		api.DefaultTenantLimit = defaults.Unlimited
	}
	authn := auth.NewAuthenticator(st)
	if opts.KeyCacheTTL > 0 {
		clock := opts.KeyCacheClock
		if clock == nil {
			clock = clockwork.NewRealClock()
		}
		authn = authn.WithCache(opts.KeyCacheTTL, clock)
	}
	s.Server = httptest.NewServer(httpapi.New(s.Service, authn, api))
	s.closers = append(s.closers, s.Server.Close)
	s.URL = s.Server.URL
	return s, nil
}

// NewAdminKeyFor is NewAdminKey that fails t on an error.
func (s *Stack) NewAdminKeyFor(t testing.TB, tenant, principal string) string {
	t.Helper()
	key, err := s.NewAdminKey(context.Background(), tenant, principal)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// NewKey creates a member API key for (tenant, principal).
func (s *Stack) NewKey(ctx context.Context, tenant, principal string) (string, error) {
	return s.newKey(ctx, tenant, principal, dockettype.RoleMember)
}

// NewAdminKey creates an admin API key for (tenant, principal).
func (s *Stack) NewAdminKey(ctx context.Context, tenant, principal string) (string, error) {
	return s.newKey(ctx, tenant, principal, dockettype.RoleAdmin)
}

func (s *Stack) newKey(ctx context.Context, tenant, principal string, role dockettype.Role) (string, error) {
	key, _, err := auth.CreateKey(ctx, s.Store, s.Service.Config().Clock.Now(), tenant, principal, role)
	if err != nil {
		return "", fmt.Errorf("create key: %w", err)
	}
	return key, nil
}

// SetTenantLimit sets a tenant's in-flight limit (0: unlimited).
func (s *Stack) SetTenantLimit(ctx context.Context, tenant string, maxInFlight int) error {
	_, err := s.Store.UpdateTenant(ctx, &store.UpdateTenantParams{
		Now: s.Service.Config().Clock.Now(), Tenant: tenant, MaxInFlight: &maxInFlight,
	})
	return err
}

// Close stops the server, the service and the store, in that order. It is
// safe to call more than once.
func (s *Stack) Close() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		s.closers[i]()
	}
	s.closers = nil
}
