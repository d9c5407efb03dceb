//go:build unix

package faultcheck

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/dsn"
	"github.com/docket-dev/docket/internal/store"
)

// Options configure a run of the checker.
type Options struct {
	// Binary is the docket executable run as the server under test
	// (`serve`) and for the admin commands (`migrate`, `keys create`,
	// `tenants set-limits`).
	Binary string
	// DB is the database: a SQLite file path or a postgres:// URL.
	DB string
	// OpenStore opens DB for the checker's own reads (the store contract).
	OpenStore func(ctx context.Context, db string) (store.Store, error)
	// Scenarios to run, by name (ScenarioNames), in order.
	Scenarios []string
	// Duration is how long the load and the faults run, per scenario.
	Duration time.Duration
	// Seed makes the fault schedule and the load's choices reproducible.
	Seed uint64
	// WorkDir holds each scenario's node logs, execution logs and history.
	WorkDir string
	// Clients is the number of concurrent client processes; default 10.
	Clients int
	// DrainTimeout bounds the wait for every task to be terminal after the
	// load; default 90s.
	DrainTimeout time.Duration
	// LeaseTTL is the servers' lease TTL; default 3s. Heartbeat and
	// recovery intervals follow it.
	LeaseTTL time.Duration
	// Progress receives a line per step; nil for none.
	Progress io.Writer
	// Clock times the run: the load and drain windows, the waits between
	// faults and the stamps of the history. The servers under test keep
	// their own clocks. Default: the real clock.
	Clock clockwork.Clock
}

// Limits the servers under test run with: small, so that admission is
// refused often and the checker can see it never lets one task too many in.
const (
	poolCapacity = 16
	nodeWorkers  = 8
)

// tenantLimits are the tenants of a run: two with small limits, one bounded
// by the pool alone.
var tenantLimits = []struct {
	suffix string
	limit  int
}{{"a", 3}, {"b", 6}, {"c", 0}}

// Run runs each scenario of opts in turn and returns their reports.
func Run(ctx context.Context, opts Options) ([]*Report, error) {
	if opts.Clients <= 0 {
		opts.Clients = 10
	}
	if opts.DrainTimeout <= 0 {
		opts.DrainTimeout = 90 * time.Second
	}
	if opts.LeaseTTL <= 0 {
		opts.LeaseTTL = 3 * time.Second
	}
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	if opts.Clock == nil {
		opts.Clock = clockwork.NewRealClock()
	}
	if err := os.MkdirAll(opts.WorkDir, 0o700); err != nil {
		return nil, err
	}
	postgres := dsn.IsPostgres(opts.DB)
	if !postgres {
		abs, err := filepath.Abs(opts.DB)
		if err != nil {
			return nil, err
		}
		opts.DB = abs
	}
	for _, name := range opts.Scenarios {
		if _, ok := newScenario(name); !ok {
			return nil, fmt.Errorf("unknown scenario %q", name)
		}
	}
	if out, err := exec.CommandContext(ctx, opts.Binary, "migrate", "--db", opts.DB).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("docket migrate: %v: %s", err, redactOutput(out))
	}
	var reports []*Report
	for i, name := range opts.Scenarios {
		if ctx.Err() != nil {
			return reports, ctx.Err()
		}
		sc, _ := newScenario(name)
		rep := &Report{Scenario: name, Store: storeKind(postgres), Seed: opts.Seed}
		reports = append(reports, rep)
		if why := sc.Needs(opts.DB); why != "" {
			rep.Skipped = why
			fmt.Fprintf(opts.Progress, "faultcheck: %s: skipped: %s\n", name, why)
			continue
		}
		r := &rig{opts: opts, sc: sc, hist: NewHistory(opts.Clock), name: name, postgres: postgres, rep: rep,
			unfinished: map[string]dockettype.State{},
			seed:       opts.Seed ^ uint64(i+1)*0x9e3779b97f4a7c15}
		r.run(ctx)
	}
	return reports, ctx.Err()
}

func storeKind(postgres bool) string {
	if postgres {
		return "postgres"
	}
	return "sqlite"
}
