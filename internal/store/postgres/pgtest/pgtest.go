// Package pgtest opens PostgreSQL stores for tests, each in a fresh schema
// dropped when the test ends, so that runs never collide. Tests skip when
// DOCKET_TEST_POSTGRES_URL is not set.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/docket-dev/docket/internal/store/engine"
	"github.com/docket-dev/docket/internal/store/postgres"
)

// URLEnv names the variable holding the test database URL.
const URLEnv = "DOCKET_TEST_POSTGRES_URL"

// URL returns the test database URL or skips the test.
func URL(t testing.TB) string {
	t.Helper()
	url := os.Getenv(URLEnv)
	if url == "" {
		t.Skipf("%s is not set; set it to a PostgreSQL URL (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable) to run the PostgreSQL tests", URLEnv)
	}
	return url
}

// SayWhenSkipped tells whoever runs the tests, in one line, that the
// PostgreSQL tests of every package are skipped because URLEnv is not set.
// The PostgreSQL store's TestMain calls it, so a run of the whole module
// says it once. `go test ./...` shows nothing a passing package prints
// (stderr included) without -v, so the line goes to the terminal
// (/dev/tty) when there is one, else to stderr.
func SayWhenSkipped() {
	if os.Getenv(URLEnv) != "" {
		return
	}
	msg := fmt.Sprintf("docket: %s is not set: the PostgreSQL tests of every package are skipped "+
		"(set it to a database URL, e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable, to run them)\n", URLEnv)
	if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
		defer tty.Close()
		if _, err := fmt.Fprint(tty, msg); err == nil {
			return
		}
	}
	fmt.Fprint(os.Stderr, msg)
}

// Schema returns a schema name no other test uses, and drops the schema
// with everything in it when t ends.
func Schema(t testing.TB, url string) string {
	t.Helper()
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	schema := "docket_test_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Errorf("connect to drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		// The drop can collide with an autovacuum worker still busy in the
		// schema (a deadlock the server breaks by failing one side): try a
		// few times.
		for attempt := range 5 {
			if _, err = conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err == nil {
				return
			}
			time.Sleep(time.Duration(attempt+1) * 100 * time.Millisecond)
		}
		t.Errorf("drop schema %s: %v", schema, err)
	})
	return schema
}

// Open opens a store in schema (see Schema), closed when t ends.
func Open(t testing.TB, url, schema string) *engine.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), url, postgres.Options{Schema: schema})
	if err != nil {
		t.Fatalf("open PostgreSQL store: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Database creates a database no other test uses and returns its URL (on
// the server of url), for code that takes a database URL and no schema
// option, such as a `docket serve` process. It is dropped when t ends.
func Database(t testing.TB, url string) string {
	t.Helper()
	ctx := context.Background()
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	name := "docket_test_" + hex.EncodeToString(b[:])
	exec := func(sql string) error {
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, sql)
		return err
	}
	if err := exec("CREATE DATABASE " + name); err != nil {
		t.Fatalf("create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	cfg.Database = name
	u := fmt.Sprintf("postgres://%s@%s:%d/%s?sslmode=disable", cfg.User, cfg.Host, cfg.Port, name)
	if cfg.Password != "" {
		u = fmt.Sprintf("postgres://%s:%s@%s:%d/%s?sslmode=disable", cfg.User, cfg.Password, cfg.Host, cfg.Port, name)
	}
	return u
}
