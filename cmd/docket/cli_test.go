package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docket-dev/docket/internal/auth"
	"github.com/docket-dev/docket/internal/logtest"
	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/store/sqlite"
)

// runCLI runs one CLI invocation in-process. The log lines it wrote to
// stderr (serve and bench log JSON there) are checked like any test
// logger's; its other stderr lines are messages for the operator.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	logtest.Check(t, logLines(errb.String()))
	return code, out.String(), errb.String()
}

// logLines keeps the JSON lines of a command's stderr.
func logLines(stderr string) string {
	var b strings.Builder
	for _, line := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(line, "{") {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

func TestParseFlagsAnywhereAndFromEnv(t *testing.T) {
	t.Setenv("DOCKET_LEASE_TTL", "45s")
	t.Setenv("DOCKET_API_KEY", "dk_fromenv")
	t.Setenv("DOCKET_DB", "/from/env.db")
	fs := newFlags("x", &bytes.Buffer{})
	ttl := fs.Duration("lease-ttl", 30*time.Second, "")
	key := fs.String("key", "", "")
	db := dbFlag(fs)
	pos, err := parse(fs, []string{"FILE", "--db", "/given.db", "OTHER"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(pos, ",") != "FILE,OTHER" {
		t.Errorf("positional = %v, want [FILE OTHER]", pos)
	}
	if *db != "/given.db" {
		t.Errorf("--db = %q: a flag on the command line must win over DOCKET_DB", *db)
	}
	if *ttl != 45*time.Second || *key != "dk_fromenv" {
		t.Errorf("lease-ttl=%s key=%q, want values from DOCKET_LEASE_TTL and DOCKET_API_KEY", *ttl, *key)
	}
	t.Setenv("DOCKET_LEASE_TTL", "soon")
	fs = newFlags("x", &bytes.Buffer{})
	fs.Duration("lease-ttl", time.Second, "")
	if _, err := parse(fs, nil); err == nil || !strings.Contains(err.Error(), "DOCKET_LEASE_TTL") {
		t.Errorf("bad env value: err = %v, want one naming DOCKET_LEASE_TTL", err)
	}
}

func TestAdminCommands(t *testing.T) {
	db := filepath.Join(t.TempDir(), "docket.db")
	// Admin commands refuse a database that does not exist: only serve and
	// migrate create one.
	for _, args := range [][]string{
		{"keys", "create", "--tenant", "acme", "--principal", "alice"},
		{"tenants", "set-limits", "--tenant", "acme", "--weight", "2"},
		{"rules", "list"},
	} {
		code, out, errOut := runCLI(t, append(args, "--db", db)...)
		if code != 1 || out != "" || !strings.Contains(errOut, "no database at "+db) {
			t.Fatalf("%v on a missing database: exit %d, stdout %q, stderr %q; want exit 1 naming the path", args, code, out, errOut)
		}
		if _, err := os.Stat(db); !os.IsNotExist(err) {
			t.Fatalf("%v created %s", args, db)
		}
	}
	if code, out, errOut := runCLI(t, "migrate", "--db", db); code != 0 || !strings.Contains(out, "migrations applied") {
		t.Fatalf("migrate: exit %d: %s %s", code, out, errOut)
	}

	code, out, errOut := runCLI(t, "keys", "create", "--tenant", "acme", "--principal", "alice", "--db", db)
	if code != 0 {
		t.Fatalf("keys create: exit %d: %s", code, errOut)
	}
	key := strings.TrimSpace(out)
	if !strings.HasPrefix(key, auth.KeyPrefix) || strings.Count(out, "\n") != 1 {
		t.Fatalf("keys create printed %q, want the key alone on one line", out)
	}
	// A tenant created by keys create gets the default in-flight limit.
	if tn := tenant(t, db, "acme"); tn.MaxInFlight != 1000 || tn.Weight != 1 {
		t.Fatalf("tenant created by keys create = %+v, want the default limit 1000, weight 1", tn)
	}
	code, _, errOut = runCLI(t, "keys", "create", "--tenant", "tiny", "--principal", "bob", "--default-tenant-limit", "3", "--db", db)
	if code != 0 || tenant(t, db, "tiny").MaxInFlight != 3 {
		t.Fatalf("keys create --default-tenant-limit 3: exit %d %s, tenant %+v", code, errOut, tenant(t, db, "tiny"))
	}

	code, out, errOut = runCLI(t, "tenants", "set-limits", "--db", db, "--tenant", "acme", "--max-in-flight", "10", "--weight", "3")
	if code != 0 || out != "tenant acme: max in flight 10, weight 3\n" {
		t.Fatalf("set-limits: exit %d: %q %s", code, out, errOut)
	}
	// Only the flags given change.
	code, out, errOut = runCLI(t, "tenants", "set-limits", "--db", db, "--tenant", "acme", "--weight", "5")
	if code != 0 || out != "tenant acme: max in flight 10, weight 5\n" {
		t.Fatalf("set-limits --weight alone: exit %d: %q %s; want the limit kept", code, out, errOut)
	}
	code, out, _ = runCLI(t, "tenants", "set-limits", "--db", db, "--tenant", "acme", "--max-in-flight", "0")
	if code != 0 || out != "tenant acme: max in flight unlimited, weight 5\n" {
		t.Fatalf("set-limits --max-in-flight 0: exit %d: %q; want unlimited, weight kept", code, out)
	}

	st, err := sqlite.Open(context.Background(), db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	p, err := auth.NewAuthenticator(st).Authenticate(context.Background(), key)
	if err != nil || p.Tenant != "acme" || p.Name != "alice" || p.Role != "member" {
		t.Fatalf("the printed key authenticates as %+v (%v), want acme/alice member", p, err)
	}
	if code, _, errOut := runCLI(t, "tenants", "set-limits", "--db", db, "--tenant", "acme", "--weight", "0"); code != 1 || !strings.Contains(errOut, "weight must be between 1") {
		t.Fatalf("weight 0: exit %d %q, want refused", code, errOut)
	}
}

// tenant reads a tenant straight from a SQLite database.
func tenant(t *testing.T, db, id string) *store.Tenant {
	t.Helper()
	st, err := sqlite.Open(context.Background(), db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tn, err := st.GetTenant(context.Background(), id)
	if err != nil {
		t.Fatalf("tenant %s: %v", id, err)
	}
	return tn
}

func TestRulesPublishAndPilotMode(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "docket.db")
	// Pilot mode refuses to start before anything is published.
	code, _, errOut := runCLI(t, "serve", "--mode", "pilot", "--db", db, "--listen", "127.0.0.1:0")
	if code == 0 || !strings.Contains(errOut, "rules publish") {
		t.Fatalf("pilot without rules: exit %d, stderr %q; want a non-zero exit that says to publish rules", code, errOut)
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"name":"x","rules":[{"id":"len","kind":"length","min":50,"max":10}]}`), 0o644)
	code, _, errOut = runCLI(t, "rules", "publish", bad, "--db", db)
	if code == 0 || !strings.Contains(errOut, "min 50 is greater than max 10") {
		t.Fatalf("bad rule file: exit %d, stderr %q; want the problem named", code, errOut)
	}
	good := filepath.Join(dir, "good.json")
	os.WriteFile(good, []byte(`{"name":"x","rules":[{"id":"len","kind":"length","min":1,"max":10}]}`), 0o644)
	for _, want := range []string{"published v1", "published v2"} {
		code, out, errOut := runCLI(t, "rules", "publish", good, "--db", db)
		if code != 0 || !strings.HasPrefix(out, want) {
			t.Fatalf("publish: exit %d out %q err %q, want %q", code, out, errOut, want)
		}
	}
	code, out, _ := runCLI(t, "rules", "list", "--db", db)
	if code != 0 || !strings.Contains(out, "seed-1") || !strings.Contains(out, "v1") || !strings.Contains(out, "v2") {
		t.Fatalf("rules list: %d %q", code, out)
	}
}

func TestUnknownCommandAndUsage(t *testing.T) {
	if code, _, errOut := runCLI(t, "frobnicate"); code != 2 || !strings.Contains(errOut, "unknown command") {
		t.Fatalf("unknown command: %d %q", code, errOut)
	}
	if code, out, _ := runCLI(t, "help"); code != 0 || !strings.Contains(out, "serve") {
		t.Fatalf("help: %d %q", code, out)
	}
	if code, _, errOut := runCLI(t, "get"); code == 0 || !strings.Contains(errOut, "usage") {
		t.Fatalf("get without an ID: %d %q", code, errOut)
	}
}

func TestDatabasePasswordIsNeverPrinted(t *testing.T) {
	// Nothing listens on port 1: each command fails to connect, and neither
	// its output nor its error may show a credential.
	for _, db := range []string{
		"postgres://bob:s3cret-url@127.0.0.1:1/docket?sslmode=disable&connect_timeout=2",
		"postgres://bob@127.0.0.1:1/docket?password=s3cret-param&sslmode=disable&connect_timeout=2",
		"host=127.0.0.1 port=1 password=s3cret-kv dbname=docket", // not a URL: taken for a SQLite path
	} {
		for _, args := range [][]string{
			{"migrate", "--db", db},
			{"keys", "create", "--tenant", "a", "--principal", "b", "--db", db},
			{"rules", "list", "--db", db},
			{"serve", "--db", db, "--listen", "127.0.0.1:0"},
		} {
			if strings.HasPrefix(db, "host=") && (args[0] == "migrate" || args[0] == "serve") {
				continue // these would create a SQLite file by that name
			}
			code, out, errOut := runCLI(t, args...)
			if code == 0 {
				t.Errorf("%v succeeded against a closed port", args)
			}
			if strings.Contains(out+errOut, "s3cret") {
				t.Errorf("%v printed the password:\nstdout: %s\nstderr: %s", args, out, errOut)
			}
		}
	}
}
