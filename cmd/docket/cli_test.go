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
	"github.com/docket-dev/docket/internal/store/sqlite"
)

// runCLI runs one CLI invocation in-process.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
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
	code, out, errOut := runCLI(t, "keys", "create", "--tenant", "acme", "--principal", "alice", "--db", db)
	if code != 0 {
		t.Fatalf("keys create: exit %d: %s", code, errOut)
	}
	key := strings.TrimSpace(out)
	if !strings.HasPrefix(key, auth.KeyPrefix) || strings.Count(out, "\n") != 1 {
		t.Fatalf("keys create printed %q, want the key alone on one line", out)
	}
	code, _, errOut = runCLI(t, "tenants", "set-limits", "--db", db, "--tenant", "acme", "--max-in-flight", "10", "--weight", "3")
	if code != 0 {
		t.Fatalf("set-limits: exit %d: %s", code, errOut)
	}
	st, err := sqlite.Open(context.Background(), db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	p, err := auth.NewAuthenticator(st).Authenticate(context.Background(), key)
	if err != nil || p.Tenant != "acme" || p.Name != "alice" {
		t.Fatalf("the printed key authenticates as %+v (%v), want acme/alice", p, err)
	}
	tn, err := st.GetTenant(context.Background(), "acme")
	if err != nil || tn.MaxInFlight != 10 || tn.Weight != 3 {
		t.Fatalf("tenant = %+v %v, want limit 10 weight 3", tn, err)
	}
	if code, _, _ := runCLI(t, "tenants", "set-limits", "--db", db, "--tenant", "acme", "--max-in-flight", "1", "--weight", "0"); code == 0 {
		t.Fatal("weight 0 accepted")
	}
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

func TestRedactDSN(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://bob:s3cret@db:5432/docket": "postgres://bob:xxxxx@db:5432/docket",
		"postgres://bob@db/docket":             "postgres://bob@db/docket",
		"./docket.db":                          "./docket.db",
	} {
		if got := redactDSN(in); got != want {
			t.Errorf("redactDSN(%q) = %q, want %q", in, got, want)
		}
	}
}
