package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/httpapi/httpapitest"
	"github.com/docket-dev/docket/internal/store/sqlite"
	"github.com/docket-dev/docket/internal/store/storetest"
)

// benchJSON runs `docket bench --json` and decodes its one JSON object,
// checking that every documented field is there.
func benchJSON(t *testing.T, args ...string) map[string]any {
	t.Helper()
	code, out, errOut := runCLI(t, append([]string{"bench", "--json", "--sqlite-synchronous", "normal"}, args...)...)
	if code != 0 {
		t.Fatalf("bench %v: exit %d: %s", args, code, errOut)
	}
	if strings.Count(strings.TrimSpace(out), "\n") != 0 {
		t.Fatalf("bench --json printed more than one line: %q", out)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("bench --json printed %q: %v", out, err)
	}
	for _, f := range []string{"mode", "tasks", "seconds", "tasks_per_second", "p50_ms", "p99_ms", "peak_rss_bytes", "store", "admitted", "terminal", "states"} {
		if _, ok := res[f]; !ok {
			t.Errorf("the JSON object lacks %q: %s", f, out)
		}
	}
	if res["store"] != "sqlite" {
		t.Errorf("store = %v", res["store"])
	}
	return res
}

// storeCounts returns the number of tasks in the database by state.
func storeCounts(t *testing.T, db string) map[dockettype.State]int {
	t.Helper()
	st, err := sqlite.Open(context.Background(), db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	counts, err := storetest.CountByState(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	return counts
}

// wantAllSucceeded checks that the database holds n tasks, all succeeded.
func wantAllSucceeded(t *testing.T, db string, n int) {
	t.Helper()
	counts := storeCounts(t, db)
	if len(counts) != 1 || counts[dockettype.StateSucceeded] != n {
		t.Fatalf("tasks by state = %v, want %d succeeded and nothing else", counts, n)
	}
}

func TestBenchBurnDown(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "scratch.db") // does not exist yet: bench creates it
	res := benchJSON(t, "--db", db, "--mode", "burn-down", "-n", "700", "--batch", "300", "--tenants", "3", "--workers", "8")
	if res["mode"] != "burn-down" || res["tasks"] != 700.0 || res["admitted"] != 700.0 || res["terminal"] != 700.0 ||
		res["tenants"] != 3.0 || res["workers"] != 8.0 {
		t.Fatalf("result = %v", res)
	}
	if states := res["states"].(map[string]any); len(states) != 1 || states["succeeded"] != 700.0 {
		t.Fatalf("states = %v", states)
	}
	if res["seconds"].(float64) <= 0 || res["tasks_per_second"].(float64) <= 0 || res["peak_rss_bytes"].(float64) <= 0 ||
		res["p99_ms"].(float64) < res["p50_ms"].(float64) || res["latency_samples"] != 700.0 {
		t.Errorf("figures = %v", res)
	}
	wantAllSucceeded(t, db, 700)
	counts := map[string]int{}
	st, err := sqlite.Open(context.Background(), db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, tenant := range []string{"bench-1", "bench-2", "bench-3"} {
		tn, err := st.GetTenant(context.Background(), tenant)
		if err != nil {
			t.Fatalf("tenant %s: %v", tenant, err)
		}
		counts[tenant] = tn.InFlight
	}
	// Every reservation was released when its task ended.
	for tenant, n := range counts {
		if n != 0 {
			t.Errorf("tenant %s still holds %d in flight", tenant, n)
		}
	}

	// A second run on the same database adds its own tasks.
	res = benchJSON(t, "--db", db, "-n", "50")
	if res["tasks"] != 50.0 {
		t.Fatalf("second run: tasks = %v", res["tasks"])
	}
	wantAllSucceeded(t, db, 750)
}

func TestBenchContinuous(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "scratch.db")
	res := benchJSON(t, "--db", db, "--mode", "continuous", "--duration", "1s", "--backlog", "200", "--batch", "100", "--tenants", "2")
	// How many finish inside the one-second window depends on the
	// machine; that every admitted task (the preload at least) ends
	// succeeded does not.
	admitted := res["admitted"].(float64)
	if res["mode"] != "continuous" || admitted < 200 || res["tasks"].(float64) < 0 || res["tasks"].(float64) > admitted ||
		res["terminal"] != admitted {
		t.Fatalf("result = %v", res)
	}
	wantAllSucceeded(t, db, int(admitted))
}

func TestBenchHTTP(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "scratch.db")
	res := benchJSON(t, "--db", db, "--mode", "http", "--duration", "500ms", "--clients", "4", "--tenants", "2")
	// How many requests fit in the window depends on the machine; that
	// each one was admitted (201) and ran to success does not.
	tasks := res["tasks"].(float64)
	answers, _ := res["answers"].(map[string]any)
	if res["mode"] != "http" || res["admitted"] != tasks || res["terminal"] != tasks || res["clients"] != 4.0 ||
		tasks > 0 && (len(answers) != 1 || answers["201"] != tasks) {
		t.Fatalf("result = %v", res)
	}
	wantAllSucceeded(t, db, int(tasks))
}

// Remote mode drains its backlog through the worker API: the server's own
// pool runs nothing (workers 0), so every task that succeeded was claimed,
// run and finished by a Go SDK worker over HTTP. The in-process burn-down
// runs beside it on the same database, as a comparison would.
func TestBenchRemote(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "scratch.db")
	in := benchJSON(t, "--db", db, "--mode", "burn-down", "-n", "300")
	res := benchJSON(t, "--db", db, "--mode", "remote", "-n", "600", "--batch", "250", "--tenants", "2", "--remote-workers", "3", "--slots", "40")
	if in["mode"] != "burn-down" || res["mode"] != "remote" || res["tasks"] != 600.0 || res["admitted"] != 600.0 || res["terminal"] != 600.0 ||
		res["workers"] != 0.0 || res["remote_workers"] != 3.0 || res["slots"] != 40.0 || res["tenants"] != 2.0 {
		t.Fatalf("result = %v", res)
	}
	if states := res["states"].(map[string]any); len(states) != 1 || states["succeeded"] != 600.0 {
		t.Fatalf("states = %v", states)
	}
	if res["tasks_per_second"].(float64) <= 0 || res["latency_samples"] != 600.0 || res["p99_ms"].(float64) < res["p50_ms"].(float64) {
		t.Errorf("figures = %v", res)
	}
	wantAllSucceeded(t, db, 900)
	st, err := sqlite.Open(context.Background(), db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, tenant := range []string{"bench-1", "bench-2"} {
		if tn, err := st.GetTenant(context.Background(), tenant); err != nil || tn.InFlight != 0 {
			t.Errorf("tenant %s: %+v, %v: want nothing in flight", tenant, tn, err)
		}
	}

	// Without --json: the table says who drained the tasks.
	code, out, errOut := runCLI(t, "bench", "--db", db, "--mode", "remote", "-n", "50", "--sqlite-synchronous", "normal")
	if code != 0 || !strings.Contains(out, "50 tasks drained by remote workers") || !strings.Contains(out, "4 Go SDK workers over HTTP, 500 slots each") {
		t.Fatalf("bench --mode remote: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	wantAllSucceeded(t, db, 950)
}

func TestBenchChoosesWhatToMeasure(t *testing.T) {
	t.Setenv("DOCKET_DB", filepath.Join(t.TempDir(), "server.db"))
	t.Setenv("DOCKET_MODE", "pilot")
	db := filepath.Join(t.TempDir(), "scratch.db")
	for _, tt := range []struct {
		args []string
		want string
	}{
		// DOCKET_DB names the server's database: never benched by accident.
		{nil, "give --db"},
		{[]string{"--db", db, "--url", "http://127.0.0.1:1"}, "not both"},
		{[]string{"--url", "http://127.0.0.1:1", "--mode", "http"}, "--mode does not apply"},
		{[]string{"--db", db, "--concurrency", "3"}, "--concurrency does not apply"},
		{[]string{"--db", db, "--mode", "sprint"}, "mode must be"},
		{[]string{"--db", db, "--mode", "continuous", "--duration", "0s"}, "positive duration"},
		{[]string{"--db", db, "--workers", "-1"}, "needs workers"},
		{[]string{"--db", db, "--batch", "1001"}, "batch must be"},
		{[]string{"--db", db, "--mode", "remote", "--slots", "1001"}, "slots must be"},
		{[]string{"--db", db, "--mode", "remote", "--nodes", "2"}, "nodes must be"},
		{[]string{"--url", "http://127.0.0.1:1", "--slots", "3"}, "--slots does not apply"},
	} {
		code, _, errOut := runCLI(t, append([]string{"bench"}, tt.args...)...)
		if code == 0 || !strings.Contains(errOut, tt.want) {
			t.Errorf("bench %v: exit %d, stderr %q, want an error with %q", tt.args, code, errOut, tt.want)
		}
	}
	if _, err := os.Stat(db); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused bench created its database (%v)", err)
	}
	// DOCKET_MODE (serve's demo or pilot) is not the bench's mode.
	if res := benchJSON(t, "--db", db, "-n", "5"); res["mode"] != "burn-down" {
		t.Errorf("mode = %v, want burn-down", res["mode"])
	}
}

// The bench of a running server submits every task over HTTP, waits for
// each to finish, and reports what it saw; --json prints one object.
func TestBenchOfARunningServer(t *testing.T) {
	s := httpapitest.New(t, httpapitest.Options{})
	code, out, errOut := runCLI(t, "bench", "--url", s.URL, "--key", s.Key, "-n", "40", "--concurrency", "4", "--json")
	if code != 0 {
		t.Fatalf("bench --url --json: exit %d: %s", code, errOut)
	}
	var res struct {
		Mode           string         `json:"mode"`
		Tasks          int            `json:"tasks"`
		TasksPerSecond float64        `json:"tasks_per_second"`
		P50MS          float64        `json:"p50_ms"`
		P99MS          float64        `json:"p99_ms"`
		MaxMS          float64        `json:"max_ms"`
		States         map[string]int `json:"states"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("bench --url --json printed %q: %v", out, err)
	}
	if res.Mode != "url" || res.Tasks != 40 || res.States["succeeded"] != 40 || res.TasksPerSecond <= 0 {
		t.Fatalf("bench --url --json: %+v, want 40 succeeded tasks at a positive rate", res)
	}
	if !(res.P50MS <= res.P99MS && res.P99MS <= res.MaxMS) {
		t.Fatalf("latency percentiles out of order: p50 %v p99 %v max %v", res.P50MS, res.P99MS, res.MaxMS)
	}
	code, out, errOut = runCLI(t, "bench", "--url", s.URL, "--key", s.Key, "-n", "5", "--concurrency", "2")
	// States are spelled as the in-process bench's table spells them, not
	// as a Go map.
	if code != 0 || !strings.Contains(out, "end to end:") || !strings.Contains(out, "states: succeeded 5\n") || strings.Contains(out, "map[") {
		t.Fatalf("bench --url: exit %d, printed %q (%s)", code, out, errOut)
	}
}
