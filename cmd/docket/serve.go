package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/jonboulle/clockwork"

	"github.com/docket-dev/docket"
	"github.com/docket-dev/docket/internal/defaults"
	"github.com/docket-dev/docket/internal/dsn"
	"github.com/docket-dev/docket/internal/faultcheck"
	"github.com/docket-dev/docket/internal/node"
	"github.com/docket-dev/docket/workflow"
)

// serveFlags defines serve's flags on fs, each defaulting to the value of
// the defaults table (0 where the default is computed: workers per CPU, the
// heartbeat interval from the lease TTL), and returns the configuration
// they fill.
func serveFlags(fs *flag.FlagSet) *node.Config {
	cfg := new(node.Config)
	unlimited, none := defaults.Unlimited, defaults.NoWorkers
	fs.StringVar(&cfg.DB, "db", defaults.DB, "SQLite file path, or a postgres:// URL")
	fs.StringVar(&cfg.Listen, "listen", defaults.Listen, "HTTP listen address")
	fs.StringVar(&cfg.Mode, "mode", defaults.Mode, "demo (frozen seed rules, demo workflows) or pilot (published rule set required)")
	fs.IntVar(&cfg.OnlineWorkers, "online-workers", 0, fmt.Sprintf("online pool workers on this node (0: %d per CPU; %d: none)", defaults.OnlineWorkersPerCPU, none))
	fs.IntVar(&cfg.OfflineWorkers, "offline-workers", 0, fmt.Sprintf("offline pool workers on this node (0: %d per CPU; %d: none)", defaults.OfflineWorkersPerCPU, none))
	fs.IntVar(&cfg.OnlineCapacity, "online-capacity", defaults.Capacity, fmt.Sprintf("most non-terminal tasks admitted to the online pool (%d: unlimited)", unlimited))
	fs.IntVar(&cfg.OfflineCapacity, "offline-capacity", defaults.Capacity, fmt.Sprintf("most non-terminal tasks admitted to the offline pool (%d: unlimited)", unlimited))
	durationVar(fs, &cfg.LeaseTTL, "lease-ttl", defaults.LeaseTTL, "how long a claim lasts without a heartbeat")
	durationVar(fs, &cfg.HeartbeatInterval, "heartbeat-interval", 0, fmt.Sprintf("lease renewal period (0: lease-ttl/%d)", defaults.HeartbeatsPerLease))
	durationVar(fs, &cfg.RecoveryInterval, "recovery-interval", defaults.RecoveryInterval, "expired-lease recovery period")
	durationVar(fs, &cfg.DeadlineInterval, "deadline-interval", defaults.DeadlineInterval, "deadline enforcement period")
	durationVar(fs, &cfg.DefaultTimeout, "default-timeout", defaults.DefaultTimeout, "deadline of tasks that name no timeout")
	unlimitedDurationVar(fs, &cfg.Retention, "retention", defaults.Retention,
		fmt.Sprintf("finished tasks older than this are deleted with their input, events, evidence and idempotency binding (%d: keep them)", unlimited))
	durationVar(fs, &cfg.CleanerInterval, "cleaner-interval", defaults.CleanerInterval, "retention cleaner period")
	durationVar(fs, &cfg.ScheduleInterval, "schedule-interval", defaults.ScheduleInterval, "period of the scheduler that fires the periodic schedules")
	durationVar(fs, &cfg.ShutdownGrace, "shutdown-grace", defaults.ShutdownGrace, "how long shutdown lets running tasks finish")
	fs.Int64Var(&cfg.MaxBodyBytes, "max-body-bytes", defaults.MaxBodyBytes, "largest request body, and largest task of a batch")
	fs.Int64Var(&cfg.MaxBatchBytes, "max-batch-bytes", defaults.MaxBatchBytes, "largest body of POST /v1/tasks/batch")
	fs.IntVar(&cfg.MaxResultBytes, "max-result-bytes", defaults.MaxResultBytes, "largest workflow result; a larger one fails the task with result_too_large")
	fs.StringVar(&cfg.SQLiteSynchronous, "sqlite-synchronous", defaults.SQLiteSynchronous, "SQLite durability: full (fsync every commit) or normal")
	fs.BoolVar(&cfg.AllowForeignDatabase, "allow-foreign-database", false,
		"install Docket's tables in a database (PostgreSQL: schema) that holds other tables and no Docket migration record")
	fs.IntVar(&cfg.DefaultTenantLimit, "default-tenant-limit", defaults.TenantLimit, defaultTenantLimitUsage)
	fs.Int64Var(&cfg.TenantStorageQuota, "tenant-storage-quota", defaults.TenantStorageQuota,
		fmt.Sprintf("bytes of inputs, results and evidence a tenant without its own quota may keep (%d: unlimited); see docs/limits.md", unlimited))
	fs.IntVar(&cfg.MaxConnections, "max-connections", defaults.MaxConnections, "most open client connections (lowered to fit the open-file limit); more wait to be accepted")
	durationVar(fs, &cfg.BodyTimeout, "body-timeout", defaults.BodyTimeout, "how long a client may take to send a request body")
	fs.IntVar(&cfg.MaxWaits, "max-waits", defaults.MaxWaits, fmt.Sprintf("most long polls (?wait=) held at once on this node (%d: no bound); more are answered 429", unlimited))
	fs.IntVar(&cfg.MaxWaitsPerTenant, "max-waits-per-tenant", defaults.MaxWaitsPerTenant, fmt.Sprintf("most long polls held at once per tenant on this node (%d: no bound)", unlimited))
	fs.IntVar(&cfg.MaxConnectionsPerIP, "max-connections-per-ip", defaults.MaxConnectionsPerIP,
		fmt.Sprintf("most open client connections from one remote address (%d: no bound; behind a reverse proxy every client has its address)", unlimited))
	fs.Int64Var(&cfg.MaxBodyMemory, "max-body-memory", defaults.MaxBodyMemory,
		fmt.Sprintf("most bytes of request bodies read and decoded at once on this node; more are answered 429 (%d: no bound)", unlimited))
	return cfg
}

func serveCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("serve", stderr)
	cfg := serveFlags(fs)
	// Hidden, for `docket faultcheck` only (command line only, not in --help).
	clockOffset := durationFlag(fs, "clock-offset", 0, "shift this node's clock (fault testing)")
	probeDir := fs.String("faultcheck-probe", "", "register the faultcheck.probe workflow, logging its executions in this folder")
	if _, _, err := parseArgs(fs, args, hiddenFlags...); err != nil {
		return err
	}
	if *probeDir != "" {
		cfg.Workflows = workflow.NewRegistry()
		probeLog, err := faultcheck.RegisterProbe(cfg.Workflows, *probeDir, clockwork.NewRealClock())
		if err != nil {
			return err
		}
		defer probeLog.Close()
	}
	defaults.TuneGC(cfg.MaxBodyMemory, os.Getenv)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	n, err := node.New(ctx, *cfg, node.Options{Version: docket.Version(), ClockOffset: *clockOffset})
	if err != nil {
		return err
	}
	if n.Mode() == node.ModeDemo {
		key, err := n.Bootstrap(ctx)
		if err != nil {
			n.Close()
			return fmt.Errorf("create the demo tenant: %w", err)
		}
		if key != "" {
			fmt.Fprintf(stdout, "Created tenant \"demo\". Its API key, shown only this once:\n\n  %s\n\nexport DOCKET_API_KEY=%s\n\n", key, key)
		}
	}
	if err := n.Start(ctx); err != nil {
		n.Close()
		return err
	}
	fmt.Fprintf(stdout, "Docket listening on %s (version %s, mode %s, database %s)\n", n.URL(), docket.Version(), n.Mode(), dsn.Redact(cfg.DB))
	fmt.Fprintf(stdout, "Dashboard: %s/ui (sign in with an API key)\n", n.URL())
	if n.Mode() == node.ModePilot {
		fmt.Fprintln(stdout, "Pilot mode makes no tenant or key: create one with `docket keys create --tenant T --principal P --role admin` (same --db)")
	}
	<-ctx.Done()
	fmt.Fprintln(stdout, "Shutting down…")
	return n.Stop()
}
