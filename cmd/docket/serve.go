package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/docket-dev/docket"
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
	fs.DurationVar(&cfg.ShutdownGrace, "shutdown-grace", 10*time.Second, "how long shutdown lets running tasks finish")
	fs.Int64Var(&cfg.MaxBodyBytes, "max-body-bytes", 1<<20, "largest request body, and largest task of a batch")
	fs.Int64Var(&cfg.MaxBatchBytes, "max-batch-bytes", 16<<20, "largest body of POST /v1/tasks/batch")
	fs.StringVar(&cfg.SQLiteSynchronous, "sqlite-synchronous", "full", "SQLite durability: full (fsync every commit) or normal")
	if _, err := parse(fs, args); err != nil {
		return err
	}
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
	fmt.Fprintf(stdout, "Docket listening on %s (mode %s, database %s)\n", srv.URL(), cfg.Mode, redactDSN(cfg.DB))
	<-ctx.Done()
	fmt.Fprintln(stdout, "Shutting down…")
	return srv.Stop()
}

// redactDSN hides the password of a database URL before it is printed.
func redactDSN(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.User == nil {
		return dsn
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}
