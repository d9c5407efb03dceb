package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/docket-dev/docket/internal/auth"
	"github.com/docket-dev/docket/internal/store/postgres/pgtest"
	"github.com/docket-dev/docket/internal/store/storeopen"
)

// testDatabases returns a migrated SQLite file and, when a test database is
// set, the URL of a migrated PostgreSQL schema of its own.
func testDatabases(t *testing.T) map[string]string {
	t.Helper()
	dbs := map[string]string{"sqlite": filepath.Join(t.TempDir(), "docket.db")}
	if base := os.Getenv(pgtest.URLEnv); base != "" {
		schema := pgtest.Schema(t, base)
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Fatal(err)
		}
		_, err = conn.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize())
		conn.Close(ctx)
		if err != nil {
			t.Fatal(err)
		}
		u, _ := url.Parse(base)
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		dbs["postgres"] = u.String()
	}
	for name, db := range dbs {
		if code, _, errOut := runCLI(t, "migrate", "--db", db); code != 0 {
			t.Fatalf("migrate %s: %s", name, errOut)
		}
	}
	return dbs
}

// keysJSON is what keys list prints as JSON.
type keysJSON struct {
	Keys []struct {
		ID        string     `json:"id"`
		Tenant    string     `json:"tenant"`
		Principal string     `json:"principal"`
		Role      string     `json:"role"`
		CreatedAt time.Time  `json:"created_at"`
		RevokedAt *time.Time `json:"revoked_at"`
	} `json:"keys"`
}

// keys create, keys list, keys revoke and tenants list on each store: the
// JSON is the admin API's, the table is readable, a listing never shows a
// key, and a revoked key no longer authenticates.
func TestKeysAndTenantsCommands(t *testing.T) {
	for name, db := range testDatabases(t) {
		t.Run(name, func(t *testing.T) {
			create := func(args ...string) string {
				t.Helper()
				code, out, errOut := runCLI(t, append([]string{"keys", "create", "--db", db}, args...)...)
				if code != 0 {
					t.Fatalf("keys create %v: exit %d: %s", args, code, errOut)
				}
				return strings.TrimSpace(out)
			}
			admin := create("--tenant", "demo", "--principal", "demo", "--role", "admin")
			bob := create("--tenant", "beta", "--principal", "bob")
			code, out, errOut := runCLI(t, "tenants", "set-limits", "--db", db, "--tenant", "beta", "--max-in-flight", "0", "--weight", "3")
			if code != 0 {
				t.Fatalf("set-limits: %d %s", code, errOut)
			}

			code, out, errOut = runCLI(t, "tenants", "list", "--db", db)
			if code != 0 {
				t.Fatalf("tenants list: exit %d: %s", code, errOut)
			}
			var tenants struct {
				Tenants []tenantJSON `json:"tenants"`
			}
			if err := json.Unmarshal([]byte(out), &tenants); err != nil ||
				!slices.Equal(tenants.Tenants, []tenantJSON{{"beta", 0, 3, 0}, {"demo", 1000, 1, 0}}) {
				t.Fatalf("tenants list = %s (%v), want beta (unlimited, weight 3) and demo", out, err)
			}
			code, out, _ = runCLI(t, "tenants", "list", "--db", db, "--json=false")
			if code != 0 || !strings.Contains(out, "TENANT") || !tableRow(out, "beta", "unlimited", "3", "0") {
				t.Fatalf("tenants list table:\n%s", out)
			}

			code, out, errOut = runCLI(t, "keys", "list", "--db", db)
			if code != 0 {
				t.Fatalf("keys list: exit %d: %s", code, errOut)
			}
			if strings.Contains(out, admin) || strings.Contains(out, bob) || strings.Contains(out, auth.HashKey(bob)) {
				t.Fatalf("keys list shows a key or its hash:\n%s", out)
			}
			var all keysJSON
			if err := json.Unmarshal([]byte(out), &all); err != nil || len(all.Keys) != 2 {
				t.Fatalf("keys list = %s (%v), want two keys", out, err)
			}
			code, out, _ = runCLI(t, "keys", "list", "--tenant", "beta", "--db", db)
			var beta keysJSON
			if err := json.Unmarshal([]byte(out), &beta); code != 0 || err != nil || len(beta.Keys) != 1 ||
				beta.Keys[0].Principal != "bob" || beta.Keys[0].Role != "member" || beta.Keys[0].RevokedAt != nil {
				t.Fatalf("keys list --tenant beta = %s", out)
			}
			bobID := beta.Keys[0].ID

			code, out, errOut = runCLI(t, "keys", "revoke", bobID, "--db", db, "--json=false")
			if code != 0 || !strings.Contains(out, "key "+bobID+" (beta/bob) revoked at ") {
				t.Fatalf("keys revoke: exit %d: %q %s", code, out, errOut)
			}
			st, err := storeopen.Open(context.Background(), db, storeopen.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if _, err := auth.NewAuthenticator(st).Authenticate(context.Background(), bob); !errors.Is(err, auth.ErrUnauthenticated) {
				t.Fatalf("the revoked key authenticates: %v", err)
			}
			if p, err := auth.NewAuthenticator(st).Authenticate(context.Background(), admin); err != nil || p.Role != "admin" {
				t.Fatalf("the admin key: %+v %v", p, err)
			}
			code, out, _ = runCLI(t, "keys", "list", "--db", db, "--json=false")
			if code != 0 || !tableRow(out, bobID, "beta", "bob", "member") || strings.Count(out, "\n") != 3 {
				t.Fatalf("keys list table:\n%s", out)
			}
			// Revoking again keeps the first revocation; an unknown ID is an error.
			code, out, _ = runCLI(t, "keys", "revoke", "--db", db, bobID)
			var again struct {
				RevokedAt *time.Time `json:"revoked_at"`
			}
			if err := json.Unmarshal([]byte(out), &again); code != 0 || err != nil || again.RevokedAt == nil {
				t.Fatalf("keys revoke again: exit %d: %s", code, out)
			}
			code, _, errOut = runCLI(t, "keys", "revoke", "--db", db, "key_nope")
			if code != 1 || !strings.Contains(errOut, `no key "key_nope"`) {
				t.Fatalf("revoke an unknown key: exit %d: %s", code, errOut)
			}
			if code, _, _ = runCLI(t, "keys", "revoke", "--db", db); code != 2 {
				t.Fatalf("keys revoke without an ID: exit %d, want 2", code)
			}
		})
	}
}

// The new admin commands refuse a SQLite file that does not exist.
func TestListCommandsRefuseAMissingDatabase(t *testing.T) {
	db := filepath.Join(t.TempDir(), "docket.db")
	for _, args := range [][]string{{"keys", "list"}, {"keys", "revoke", "key_x"}, {"tenants", "list"}} {
		code, out, errOut := runCLI(t, append(args, "--db", db)...)
		if code != 1 || out != "" || !strings.Contains(errOut, "no database at "+db) {
			t.Fatalf("%v on a missing database: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
}

// tableRow reports whether some line of out holds the fields in order,
// separated by spaces (a table row).
func tableRow(out string, fields ...string) bool {
	for _, line := range strings.Split(out, "\n") {
		if strings.Join(strings.Fields(line)[:min(len(fields), len(strings.Fields(line)))], " ") == strings.Join(fields, " ") {
			return true
		}
	}
	return false
}
