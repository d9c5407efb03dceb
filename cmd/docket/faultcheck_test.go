//go:build unix

package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/docket-dev/docket/internal/faultcheck"
)

// TestFaultcheckKill9 runs `docket faultcheck --scenario kill9` briefly, as
// a user would, on SQLite and (when DOCKET_TEST_POSTGRES_URL is set) on a
// fresh PostgreSQL database: servers of the binary are killed with SIGKILL
// and restarted under load, and the checker must find no anomaly.
func TestFaultcheckKill9(t *testing.T) {
	testFaultcheck(t, faultcheck.ScenarioKill9, nil, func(t *testing.T, rep *faultcheck.Report) {
		if rep.Faults[faultcheck.FaultKill] == 0 {
			t.Errorf("no kill -9 in 15 s: faults %v", rep.Faults)
		}
	})
}

// TestFaultcheckSigterm runs `docket faultcheck --scenario sigterm` the
// same way: servers are stopped with SIGTERM while tasks run, with a grace
// shorter than the longest tasks, and started again. No finished outcome
// may be lost, no attempt charged, and every task handed back runs again.
//
// One anomaly is known and only logged: claim_lost, a claim in flight when
// a stop began that committed unseen (README, Known limits; PostgreSQL,
// about one run in four). The command itself still fails on it.
func TestFaultcheckSigterm(t *testing.T) {
	testFaultcheck(t, faultcheck.ScenarioSigterm, []string{faultcheck.AnomalyClaimLost}, func(t *testing.T, rep *faultcheck.Report) {
		r := rep.Result
		if stops := rep.Faults[faultcheck.FaultTerm]; stops == 0 || r.GracefulStops != stops {
			t.Errorf("%d graceful stops of %d SIGTERMs, want every stop graceful, and at least one", r.GracefulStops, stops)
		}
		t.Logf("%d executions finished inside the grace, %d leases handed back", r.FinishedInGrace, r.HandedBack)
	})
}

// TestFaultcheckRemote runs `docket faultcheck --scenario remote` the same
// way: every task runs in remote worker processes of the binary (the
// server's pools cannot run the remote workflow, so every execution the
// check counts is a worker's), which are killed with SIGKILL or frozen past
// their leases, while a proxy cuts and stalls their connections and drops
// committed finish answers.
func TestFaultcheckRemote(t *testing.T) {
	testFaultcheck(t, faultcheck.ScenarioRemote, nil, func(t *testing.T, rep *faultcheck.Report) {
		f := rep.Faults
		if f[faultcheck.FaultKill]+f[faultcheck.FaultPause] == 0 || f[faultcheck.FaultDropFinish] == 0 {
			t.Errorf("no worker killed or frozen, or no finish answer dropped, in 15 s: faults %v", f)
		}
	})
}

// testFaultcheck runs one scenario through the binary on SQLite and, when
// DOCKET_TEST_POSTGRES_URL is set, on a fresh PostgreSQL database; check
// asserts what is particular to the scenario. Anomalies of the known kinds
// are logged, not failed.
func testFaultcheck(t *testing.T, scenario string, known []string, check func(*testing.T, *faultcheck.Report)) {
	if testing.Short() {
		t.Skip("builds the binary and runs it for about 30 s")
	}
	bin := buildDocket(t)
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		check(t, runFaultcheck(t, bin, filepath.Join(t.TempDir(), "fc.db"), scenario, known))
	})
	t.Run("postgres", func(t *testing.T) {
		base := os.Getenv("DOCKET_TEST_POSTGRES_URL")
		if base == "" {
			t.Skip("DOCKET_TEST_POSTGRES_URL is not set")
		}
		t.Parallel()
		check(t, runFaultcheck(t, bin, scratchDatabase(t, base), scenario, known))
	})
}

// runFaultcheck runs `docket faultcheck --scenario scenario` for 15 s,
// checks what every scenario must show (no anomaly but of the known kinds,
// every acknowledged submission a task, executions logged) and returns the
// report.
func runFaultcheck(t *testing.T, bin, db, scenario string, known []string) *faultcheck.Report {
	work := t.TempDir()
	cmd := exec.Command(bin, "faultcheck", "--db", db, "--scenario", scenario, "--duration", "15s",
		"--seed", "1", "--json", "--workdir", work)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var reports []*faultcheck.Report
	if jerr := json.Unmarshal(stdout.Bytes(), &reports); jerr != nil {
		t.Fatalf("faultcheck: %v; output is not the JSON reports (%v):\n%s\nstderr:\n%s", err, jerr, stdout.String(), stderr.String())
	}
	if len(reports) != 1 || reports[0].Result == nil || reports[0].Error != "" {
		t.Fatalf("faultcheck: %v; reports %s, want one with a result\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	r := reports[0].Result
	unknown := r.AnomalyCount()
	for _, kind := range known {
		if n := r.Anomalies[kind]; n > 0 {
			unknown -= n
			t.Logf("%d %s anomalies (known, see the test's comment): %q", n, kind, r.Examples[kind])
		}
	}
	if unknown != 0 {
		t.Errorf("%d anomalies: %v %q", unknown, r.Anomalies, r.Examples)
	}
	if err != nil && r.AnomalyCount() == 0 {
		t.Errorf("faultcheck: %v with no anomaly\nstderr:\n%s", err, stderr.String())
	}
	// How many submissions 15 s acknowledge depends on the machine's load
	// (45 once, beside a CPU hog and another package's tests): any will do.
	if r.Acknowledged == 0 || r.Tasks != r.Acknowledged || r.Executions == 0 {
		t.Errorf("acknowledged %d, tasks %d, executions %d: want submissions acknowledged, each a task, and executions logged",
			r.Acknowledged, r.Tasks, r.Executions)
	}
	t.Logf("%s: %d operations, %d acknowledged, faults %v, %d lease recoveries, %d tasks run again",
		reports[0].Store, r.Operations, r.Acknowledged, reports[0].Faults, r.LeaseRecoveries, r.ReExecuted)
	return reports[0]
}

// scratchDatabase creates an empty database next to the one base names
// and drops it when the test ends (the checker's servers need a database
// of their own, not a schema).
func scratchDatabase(t *testing.T, base string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connect to PostgreSQL: %v", err)
	}
	defer conn.Close(ctx)
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "docket_fc_" + hex.EncodeToString(b[:])
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Errorf("connect to drop %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}
