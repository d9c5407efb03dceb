//go:build unix

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/docket-dev/docket/internal/dsn"
	"github.com/docket-dev/docket/internal/faultcheck"
	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/store/storeopen"
)

// faultcheckCmd runs the fault checker (internal/faultcheck): servers of
// this binary as child processes, a load recorded in a history, faults,
// a drain, and a check of the history against the database.
func faultcheckCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("faultcheck", stderr)
	db := fs.String("db", "", "database to check: a SQLite file (created if missing; use a scratch file) or a postgres:// URL (use a scratch database)")
	scenario := fs.String("scenario", faultcheck.ScenarioAll, strings.Join(faultcheck.ScenarioNames(), ", ")+", a comma-separated list, or all")
	duration := durationFlag(fs, "duration", 2*time.Minute, "how long the load and the faults run; with several scenarios, shared evenly among them")
	seed := fs.Uint64("seed", 0, "seed of the fault schedule and the load's choices (0: from the clock, printed)")
	workDir := fs.String("workdir", "", "keep node logs, execution logs and histories here (default: a temporary folder, kept only when a scenario fails)")
	clients := fs.Int("clients", 10, "concurrent client processes")
	drain := durationFlag(fs, "drain-timeout", 90*time.Second, "how long to wait, after the load, for every task to finish")
	leaseTTL := durationFlag(fs, "lease-ttl", 3*time.Second, "lease TTL of the servers under test (heartbeats every TTL/3, recovery every TTL/6)")
	asJSON := fs.Bool("json", false, "print the reports as one JSON array instead of text")
	// --db comes from the command line only: the checker adds tenants and
	// tasks to it, and pg-restart stops its server.
	_, given, err := parseArgs(fs, args, "db")
	if err != nil {
		return err
	}
	if !given["db"] || *db == "" {
		return errors.New("give --db PATH|URL: a scratch SQLite file or PostgreSQL database (the checker adds tenants and tasks to it)")
	}
	scenarios, err := faultcheck.ParseScenarios(*scenario)
	if err != nil {
		return err
	}
	if *duration < time.Second || *clients < 1 || *leaseTTL < 300*time.Millisecond {
		return errors.New("--duration must be at least 1s, --clients at least 1, --lease-ttl at least 300ms")
	}
	bin, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find this binary to run its servers: %w", err)
	}
	if *seed == 0 {
		*seed = uint64(time.Now().UnixNano())
	}
	dir, keep := *workDir, *workDir != ""
	if !keep {
		if dir, err = os.MkdirTemp("", "docket-faultcheck-"); err != nil {
			return err
		}
	}
	runnable := 0
	for _, s := range scenarios {
		if faultcheck.SkipReason(s, *db) == "" {
			runnable++
		}
	}
	per := *duration
	if runnable > 1 {
		per = *duration / time.Duration(runnable)
	}
	fmt.Fprintf(stderr, "faultcheck: %s, scenarios %v, %s of load each, seed %d\n", dsn.Redact(*db), scenarios, per.Round(time.Second), *seed)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	reports, err := faultcheck.Run(ctx, faultcheck.Options{
		Binary: bin, DB: *db, Scenarios: scenarios, Duration: per, Seed: *seed, WorkDir: dir,
		Clients: *clients, DrainTimeout: *drain, LeaseTTL: *leaseTTL, Progress: stderr,
		OpenStore: func(ctx context.Context, db string) (store.Store, error) {
			return storeopen.Open(ctx, db, storeopen.Options{})
		},
	})
	failed := false
	for _, r := range reports {
		failed = failed || r.Failed()
	}
	if *asJSON {
		b, jerr := json.MarshalIndent(reports, "", "  ")
		if jerr != nil {
			return jerr
		}
		fmt.Fprintf(stdout, "%s\n", b)
	} else {
		faultcheck.WriteText(stdout, reports)
	}
	if !keep && !failed && err == nil {
		os.RemoveAll(dir)
	} else {
		fmt.Fprintf(stderr, "faultcheck: logs and histories kept in %s\n", dir)
	}
	if errors.Is(err, context.Canceled) {
		return errors.New("interrupted")
	}
	if err != nil {
		return err
	}
	if failed {
		return errors.New("anomalies found (see above)")
	}
	return nil
}

// faultcheckWorkerCmd is a remote worker process of the fault checker's
// remote scenario (hidden: `docket faultcheck` runs it). It serves
// faultcheck.remote_probe with a Go SDK worker until SIGTERM.
func faultcheckWorkerCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("faultcheck-worker", stderr)
	url := fs.String("url", "", "the server (or a proxy in front of it)")
	keyFile := fs.String("key-file", "", "file holding a worker key")
	execDir := fs.String("exec-dir", "", "folder of the execution logs")
	slots := fs.Int("slots", 4, "slots")
	id := fs.String("id", "", "worker ID")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	key, err := os.ReadFile(*keyFile)
	if err != nil || *url == "" || *execDir == "" {
		return errors.New("give --url, --key-file and --exec-dir")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return faultcheck.RunRemoteWorker(ctx, faultcheck.RemoteWorkerOptions{
		URL: *url, Key: strings.TrimSpace(string(key)), ExecDir: *execDir, Slots: *slots, ID: *id, Stdout: stdout,
		Logger: slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo})),
	})
}
