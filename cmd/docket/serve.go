package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/docket-dev/docket"
	"github.com/docket-dev/docket/internal/faultcheck"
	"github.com/docket-dev/docket/internal/httpapi"
	"github.com/docket-dev/docket/workflow"
)

func serveCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("serve", stderr)
	var cfg docket.Config
	fs.StringVar(&cfg.DB, "db", "./docket.db", "SQLite file path, or a postgres:// URL")
	fs.StringVar(&cfg.Listen, "listen", "127.0.0.1:8080", "HTTP listen address")
	fs.StringVar(&cfg.Mode, "mode", "demo", "demo (frozen seed rules, demo workflows) or pilot (published rule set required)")
	fs.IntVar(&cfg.OnlineWorkers, "online-workers", 0, "online pool workers on this node (0: 32 per CPU; -1: none)")
	fs.IntVar(&cfg.OfflineWorkers, "offline-workers", 0, "offline pool workers on this node (0: 8 per CPU; -1: none)")
	fs.IntVar(&cfg.OnlineCapacity, "online-capacity", 10000, "most non-terminal tasks admitted to the online pool")
	fs.IntVar(&cfg.OfflineCapacity, "offline-capacity", 10000, "most non-terminal tasks admitted to the offline pool")
	fs.DurationVar(&cfg.LeaseTTL, "lease-ttl", 30*time.Second, "how long a claim lasts without a heartbeat")
	fs.DurationVar(&cfg.HeartbeatInterval, "heartbeat-interval", 0, "lease renewal period (default lease-ttl/3)")
	fs.DurationVar(&cfg.RecoveryInterval, "recovery-interval", 5*time.Second, "expired-lease recovery period")
	fs.DurationVar(&cfg.DeadlineInterval, "deadline-interval", time.Second, "deadline enforcement period")
	fs.DurationVar(&cfg.DefaultTimeout, "default-timeout", 10*time.Minute, "deadline of tasks that name no timeout")
	retention := fs.Duration("retention", docket.DefaultRetention, "finished tasks older than this are deleted with their input, events, evidence and idempotency binding (0: keep them)")
	fs.DurationVar(&cfg.CleanerInterval, "cleaner-interval", time.Minute, "retention cleaner period")
	fs.DurationVar(&cfg.ShutdownGrace, "shutdown-grace", 10*time.Second, "how long shutdown lets running tasks finish")
	fs.Int64Var(&cfg.MaxBodyBytes, "max-body-bytes", 1<<20, "largest request body, and largest task of a batch")
	fs.Int64Var(&cfg.MaxBatchBytes, "max-batch-bytes", 16<<20, "largest body of POST /v1/tasks/batch")
	fs.IntVar(&cfg.MaxResultBytes, "max-result-bytes", 1<<20, "largest workflow result; a larger one fails the task with result_too_large")
	fs.StringVar(&cfg.SQLiteSynchronous, "sqlite-synchronous", "full", "SQLite durability: full (fsync every commit) or normal")
	defaultLimit := defaultTenantLimitFlag(fs)
	fs.IntVar(&cfg.MaxConnections, "max-connections", httpapi.DefaultMaxConnections, "most open client connections (lowered to fit the open-file limit); more wait to be accepted")
	fs.DurationVar(&cfg.BodyTimeout, "body-timeout", httpapi.DefaultBodyTimeout, "how long a client may take to send a request body")
	maxWaits := fs.Int("max-waits", httpapi.DefaultMaxWaits, "most long polls (?wait=) held at once on this node (0: no bound); more are answered 429")
	maxWaitsPerTenant := fs.Int("max-waits-per-tenant", httpapi.DefaultMaxWaitsPerTenant, "most long polls held at once per tenant on this node (0: no bound)")
	// Hidden, for `docket faultcheck` only (command line only, not in --help).
	clockOffset := fs.Duration("clock-offset", 0, "shift this node's clock (fault testing)")
	probeDir := fs.String("faultcheck-probe", "", "register the faultcheck.probe workflow, logging its executions in this folder")
	if _, _, err := parseArgs(fs, args, hiddenFlags...); err != nil {
		return err
	}
	cfg.Retention = *retention
	if cfg.Retention == 0 {
		cfg.Retention = -1 // keep forever
	}
	cfg.ClockOffset = *clockOffset
	if *probeDir != "" {
		cfg.Workflows = workflow.NewRegistry()
		probeLog, err := faultcheck.RegisterProbe(cfg.Workflows, *probeDir, clockwork.NewRealClock())
		if err != nil {
			return err
		}
		defer probeLog.Close()
	}
	// On the command line 0 means no bound; in docket.Config it is < 0.
	unbounded := func(n int) int {
		if n == 0 {
			return -1
		}
		return n
	}
	if *defaultLimit < 0 || *maxWaits < 0 || *maxWaitsPerTenant < 0 || cfg.MaxConnections < 1 {
		return errors.New("--default-tenant-limit, --max-waits and --max-waits-per-tenant must be >= 0, --max-connections >= 1")
	}
	cfg.DefaultTenantLimit = unbounded(*defaultLimit)
	cfg.MaxWaits, cfg.MaxWaitsPerTenant = unbounded(*maxWaits), unbounded(*maxWaitsPerTenant)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv, err := docket.New(ctx, cfg)
	if err != nil {
		return err
	}
	if cfg.Mode == docket.ModeDemo {
		key, err := srv.Bootstrap(ctx)
		if err != nil {
			srv.Close()
			return fmt.Errorf("create the demo tenant: %w", err)
		}
		if key != "" {
			fmt.Fprintf(stdout, "Created tenant \"demo\". Its API key, shown only this once:\n\n  %s\n\nexport DOCKET_API_KEY=%s\n\n", key, key)
		}
	}
	if err := srv.Start(ctx); err != nil {
		srv.Close()
		return err
	}
	fmt.Fprintf(stdout, "Docket listening on %s (version %s, mode %s, database %s)\n", srv.URL(), docket.Version(), cfg.Mode, docket.RedactDB(cfg.DB))
	fmt.Fprintf(stdout, "Dashboard: %s/ui (sign in with an API key)\n", srv.URL())
	<-ctx.Done()
	fmt.Fprintln(stdout, "Shutting down…")
	return srv.Stop()
}
