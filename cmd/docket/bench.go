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
	"runtime/pprof"
	"slices"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/docket-dev/docket/internal/bench"
	"github.com/docket-dev/docket/internal/defaults"
	"github.com/docket-dev/docket/internal/dsn"
	"github.com/docket-dev/docket/internal/queue"
	"github.com/docket-dev/docket/internal/store/storeopen"
)

// Flags of one kind of bench only.
var (
	storeBenchFlags  = []string{"cpuprofile", "mode", "duration", "clients", "tenants", "workers", "nodes", "capacity", "batch", "backlog", "sqlite-synchronous", "remote-workers", "slots"}
	remoteBenchFlags = []string{"concurrency", "workflow", "input", "pool", "key"}
)

// benchCmd measures Docket. With --db it runs the real ExecutionService on
// that store in-process (internal/bench); with --url it measures a running
// server end to end over HTTP (bench_remote.go).
func benchCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench", stderr)
	db := fs.String("db", "", "in-process bench: SQLite file (created if missing; use a scratch file) or postgres:// URL")
	url := fs.String("url", "", "bench a running server over HTTP instead (with --key or DOCKET_API_KEY)")
	key := fs.String("key", "", "API key for --url (DOCKET_API_KEY)")
	mode := fs.String("mode", string(bench.BurnDown), "burn-down, continuous, http or remote (a burn-down drained by Go SDK workers over the worker API)")
	n := fs.Int("n", 10000, "tasks: burn-down admits and drains this many; --url submits this many (default there: 5000)")
	duration := durationFlag(fs, "duration", 10*time.Second, "continuous, http: how long to measure")
	clients := fs.Int("clients", 64, "http: concurrent HTTP clients, each submitting one task at a time")
	tenants := fs.Int("tenants", 1, "spread the load over this many tenants")
	workers := fs.Int("workers", 0, fmt.Sprintf("online pool workers per node (0: %d per CPU; %d, http only: none, admission alone)", defaults.OnlineWorkersPerCPU, defaults.NoWorkers))
	nodes := fs.Int("nodes", 1, "burn-down, continuous: nodes working the store at once, each with its own connections")
	capacity := fs.Int("capacity", 100_000_000, "online pool capacity (checked on every admission)")
	batch := fs.Int("batch", queue.MaxBatchItems, "tasks per batch admission (burn-down preload, continuous top-up)")
	backlog := fs.Int("backlog", 5000, "continuous: tasks kept queued ahead of the workers")
	remoteWorkers := fs.Int("remote-workers", 4, "remote: Go SDK workers, each with its own HTTP connections")
	slots := fs.Int("slots", 500, fmt.Sprintf("remote: slots of each Go SDK worker (its largest claim; at most %d)", queue.MaxClaimTasks))
	asJSON := fs.Bool("json", false, "print one JSON object instead of progress lines and a table")
	sync := fs.String("sqlite-synchronous", defaults.SQLiteSynchronous, "SQLite durability: full (fsync every commit) or normal")
	timeout := durationFlag(fs, "timeout", 30*time.Minute, "give up after this long")
	conc := fs.Int("concurrency", 32, "--url: concurrent submitting clients (and as many waiters)")
	wf := fs.String("workflow", "demo.echo", "--url: workflow to run")
	input := fs.String("input", `{"bench":true}`, "--url: task input JSON")
	pool := fs.String("pool", "", "--url: pool override")
	cpuProfile := fs.String("cpuprofile", "", "in-process bench: write a CPU profile of the run to this file (go tool pprof)")
	// --db and --url choose the kind of bench, so they come from the command
	// line only: DOCKET_DB (the server's database) must never be benched by
	// accident. DOCKET_MODE is serve's demo/pilot.
	_, given, err := parseArgs(fs, args, "db", "url", "mode", "cpuprofile")
	if err != nil {
		return err
	}
	onlyFor := func(names []string, kind string) error {
		for _, f := range names {
			if given[f] {
				return fmt.Errorf("--%s does not apply to %s", f, kind)
			}
		}
		return nil
	}
	switch {
	case given["db"] && given["url"]:
		return errors.New("give --db (measure a store in-process) or --url (measure a running server), not both")
	case given["url"]:
		if err := onlyFor(storeBenchFlags, "the bench of a running server (--url)"); err != nil {
			return err
		}
		if !isSet(fs, "n") { // neither -n nor DOCKET_N
			*n = 5000 // this bench waits on every task: a smaller default
		}
		if *n <= 0 || *conc <= 0 {
			return errors.New("-n and --concurrency must be positive")
		}
		in, err := readInput(*input)
		if err != nil {
			return err
		}
		c, err := newClient(*url, *key)
		if err != nil {
			return err
		}
		return benchRemote(c, remoteBench{n: *n, conc: *conc, workflow: *wf, input: in, pool: *pool, timeout: *timeout, asJSON: *asJSON, clock: clockwork.NewRealClock()}, stdout)
	case !given["db"]:
		return errors.New("give --db PATH|URL to measure a store in-process, or --url URL to measure a running server")
	}
	if err := onlyFor(remoteBenchFlags, "the in-process bench (--db)"); err != nil {
		return err
	}
	opts := bench.Options{
		Mode: bench.Mode(*mode), Tasks: *n, Duration: *duration, Clients: *clients, Tenants: *tenants,
		Workers: *workers, Nodes: *nodes, Capacity: *capacity, AdmitCommitters: defaults.AdmitCommitters(*db), Batch: *batch, Backlog: *backlog, Timeout: *timeout,
		RemoteWorkers: *remoteWorkers, Slots: *slots,
		// Warnings and errors only: the access log of http mode would
		// drown the progress lines.
		Logger: slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	if !*asJSON {
		opts.Progress = stderr
	}
	if err := opts.Check(); err != nil {
		return err // before a scratch database is created for nothing
	}

	// The node in-process runs as `docket serve` would, with its defaults.
	defaults.TuneGC(defaults.MaxBodyMemory, os.Getenv)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	st, err := storeopen.Open(ctx, *db, storeopen.Options{SQLiteSynchronous: *sync})
	if err != nil {
		return err
	}
	defer st.Close()
	if *cpuProfile != "" {
		stopProfile, err := startCPUProfile(*cpuProfile)
		if err != nil {
			return err
		}
		defer stopProfile()
	}
	res, err := bench.Run(ctx, st, opts)
	if err != nil {
		return err
	}
	if *asJSON {
		out := struct {
			*bench.Result
			Store string `json:"store"`
		}{res, storeKind(*db)}
		b, err := json.Marshal(out)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(stdout, "%s\n", b)
		return err
	}
	printBenchTable(stdout, res, storeKind(*db), dsn.Redact(*db), opts.Batch)
	return nil
}

func storeKind(db string) string {
	if dsn.IsPostgres(db) {
		return "postgres"
	}
	return "sqlite"
}

// printBenchTable prints a run's summary.
func printBenchTable(w io.Writer, r *bench.Result, kind, db string, batch int) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, format string, a ...any) { fmt.Fprintf(tw, "%s\t"+format+"\n", append([]any{k}, a...)...) }
	row("mode", "%s", r.Mode)
	row("store", "%s (%s)", kind, db)
	what := map[bench.Mode]string{
		bench.BurnDown:   "tasks drained",
		bench.Continuous: "tasks finished in the window",
		bench.HTTP:       "tasks admitted (201 answers)",
		bench.Remote:     "tasks drained by remote workers",
	}[r.Mode]
	row("tasks", "%d %s", r.Tasks, what)
	row("seconds", "%.3f", r.Seconds)
	row("tasks/s", "%.0f", r.TasksPerSecond)
	lat := "admission→finish, %d sampled tasks"
	if r.Latency == "request" {
		lat = "per request, %d requests"
	}
	row("latency p50", "%.1f ms", r.P50MS)
	row("latency p99", "%.1f ms  ("+lat+")", r.P99MS, r.LatencySamples)
	row("peak RSS", "%.1f MiB", float64(r.PeakRSSBytes)/(1<<20))
	if len(r.Windows) > 0 {
		rates := make([]string, len(r.Windows))
		for i, w := range r.Windows {
			rates[i] = fmt.Sprintf("%.0f", w)
		}
		row("tasks/s by window", "%s", strings.Join(rates, " "))
	}
	if r.AdmitSeconds > 0 {
		row("admission", "%d tasks in %.3f s: %.0f tasks/s (batches of %d)", r.Admitted, r.AdmitSeconds, r.AdmitTasksPerSecond, batch)
	} else {
		row("admitted", "%d", r.Admitted)
	}
	if r.Answers != nil {
		row("answers", "%s", formatAnswers(r.Answers))
	}
	row("terminal", "%d  %s", r.Terminal, formatStates(r.States))
	if r.Mode == bench.Remote {
		row("workers", "%s over HTTP, %d slots each, %s, capacity %d", plural(r.RemoteWorkers, "Go SDK worker"), r.Slots, plural(r.Tenants, "tenant"), r.Capacity)
	} else {
		row("workers", "%d online per node, %s, %s, capacity %d", r.Workers, plural(r.Nodes, "node"), plural(r.Tenants, "tenant"), r.Capacity)
	}
	if r.Clients > 0 {
		row("clients", "%d", r.Clients)
	}
	tw.Flush()
}

func formatAnswers(a map[int]int) string {
	var statuses []int
	for s := range a {
		statuses = append(statuses, s)
	}
	slices.Sort(statuses)
	var parts []string
	for _, s := range statuses {
		label := fmt.Sprint(s)
		if s == 0 {
			label = "no answer"
		}
		parts = append(parts, fmt.Sprintf("%s: %d", label, a[s]))
	}
	return strings.Join(parts, ", ")
}

// plural spells a count of things: "1 node", "3 nodes".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// formatStates spells tasks by state, sorted: "failed 2, succeeded 1998".
func formatStates[S ~string](states map[S]int) string {
	var parts []string
	for s, n := range states {
		parts = append(parts, fmt.Sprintf("%s %d", s, n))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// startCPUProfile profiles the process's CPU into path until the returned
// stop.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}, nil
}
