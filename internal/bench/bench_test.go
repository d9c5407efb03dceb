package bench

import (
	"context"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/logtest"
	"github.com/docket-dev/docket/internal/store/postgres/pgtest"
	"github.com/docket-dev/docket/internal/store/sqlite"
	"github.com/docket-dev/docket/internal/store/storetest"
)

// The CLI tests (cmd/docket) run every mode on SQLite; this one runs the
// burn-down and continuous modes on PostgreSQL when a test database is set.
func TestRunOnPostgres(t *testing.T) {
	url := pgtest.URL(t)
	st := pgtest.Open(t, url, pgtest.Schema(t, url))
	ctx := context.Background()
	logger, _ := logtest.New(t)

	res, err := Run(ctx, st, Options{Mode: BurnDown, Tasks: 300, Batch: 120, Tenants: 2, Workers: 8, Timeout: time.Minute, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	if res.Tasks != 300 || res.Admitted != 300 || res.Terminal != 300 || res.States[dockettype.StateSucceeded] != 300 ||
		res.LatencySamples != 300 || res.Seconds <= 0 || res.Latency != "admission_to_finish" {
		t.Fatalf("burn-down = %+v", res)
	}
	res, err = Run(ctx, st, Options{Mode: Remote, Tasks: 200, Batch: 80, RemoteWorkers: 2, Slots: 30, Timeout: time.Minute, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	if res.Tasks != 200 || res.Terminal != 200 || res.States[dockettype.StateSucceeded] != 200 || res.Workers != 0 || res.RemoteWorkers != 2 || res.Slots != 30 {
		t.Fatalf("remote = %+v", res)
	}
	res, err = Run(ctx, st, Options{Mode: Continuous, Duration: 500 * time.Millisecond, Backlog: 100, Batch: 50, Timeout: time.Minute, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	// The half-second window's count depends on the machine's load (none
	// finished in it once, beside a CPU hog); what the run admitted must
	// all end succeeded.
	if res.Admitted < 100 || res.Tasks > res.Admitted || res.Terminal != res.Admitted || res.States[dockettype.StateSucceeded] != res.Admitted {
		t.Fatalf("continuous = %+v", res)
	}
	counts, err := storetest.CountByState(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for state, n := range counts {
		if state != dockettype.StateSucceeded {
			t.Errorf("%d tasks %s", n, state)
		}
		total += n
	}
	if total != 500+res.Admitted {
		t.Fatalf("%d tasks in the database, want %d", total, 500+res.Admitted)
	}
}

// http mode with no workers measures admission alone and leaves the tasks
// queued; the server, its clients and the service all stop.
func TestRunHTTPAdmissionOnly(t *testing.T) {
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "b.db"), sqlite.Options{Synchronous: "normal"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	logger, _ := logtest.New(t)
	res, err := Run(context.Background(), st, Options{Mode: HTTP, Duration: 300 * time.Millisecond, Clients: 4, Tenants: 3, Workers: -1, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	if res.Tasks <= 0 || res.Answers[http.StatusCreated] != res.Tasks || len(res.Answers) != 1 || res.Terminal != 0 ||
		res.Workers != 0 || res.Latency != "request" || res.LatencySamples != res.Tasks || res.P99MS < res.P50MS {
		t.Fatalf("http = %+v", res)
	}
	stats, err := st.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	holding := 0
	for _, ten := range stats.Tenants {
		if ten.InFlight > 0 {
			holding++
		}
	}
	if stats.Pools[0].Pool != dockettype.PoolOnline || stats.Pools[0].InFlight != res.Tasks || holding != 3 {
		t.Fatalf("stats = %+v, want %d queued tasks over 3 tenants", stats, res.Tasks)
	}
}

// Several nodes drain one store together: every task runs once and ends
// succeeded, whichever node claimed it.
func TestRunSeveralNodes(t *testing.T) {
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "n.db"), sqlite.Options{Synchronous: "normal"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	res, err := Run(context.Background(), st, Options{Mode: BurnDown, Tasks: 600, Batch: 200, Nodes: 3, Workers: 16, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if res.Nodes != 3 || res.Tasks != 600 || res.Terminal != 600 || res.States[dockettype.StateSucceeded] != 600 {
		t.Fatalf("burn-down on 3 nodes = %+v", res)
	}
	counts, err := storetest.CountByState(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	if len(counts) != 1 || counts[dockettype.StateSucceeded] != 600 {
		t.Fatalf("tasks by state = %v, want 600 succeeded", counts)
	}
	if _, err := Run(context.Background(), st, Options{Mode: HTTP, Duration: time.Second, Nodes: 2}); err == nil {
		t.Fatal("http mode accepted two nodes")
	}
}

// A continuous run reports the rate of every window it covered, the last
// one included, and leaves out a last window too short to compare.
func TestWindowsCoverTheRun(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

	w := newWindows(10*time.Minute, t0, 100)
	for m := 1; m < 10; m++ {
		w.observe(at(float64(60*m)-0.5), 100+m*60_000) // not yet a minute: still open
		w.observe(at(float64(60*m)), 100+m*60_000)
	}
	rates := w.finish(at(600.2), 100+600_000+200)
	if len(rates) != 10 {
		t.Fatalf("a 10-minute run has %d windows, want 10: %v", len(rates), rates)
	}
	for i, r := range rates[:9] {
		if r != 1000 {
			t.Errorf("minute %d: %.1f tasks/s, want 1000", i+1, r)
		}
	}
	if rates[9] != 1000 {
		t.Errorf("last minute: %.1f tasks/s, want 1000 (60,200 tasks in 60.2 s)", rates[9])
	}

	w = newWindows(2*time.Second, t0, 0) // one-second windows
	w.observe(at(1), 10)
	if rates := w.finish(at(1.4), 14); len(rates) != 1 || rates[0] != 10 {
		t.Errorf("a last window of 0.4 s: rates %v, want only the first, 10/s", rates)
	}
}
