package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/docket-dev/docket/internal/store/migration"
	"github.com/docket-dev/docket/internal/store/sqlite"
	"github.com/docket-dev/docket/internal/store/storetest"
)

// foreignFile makes a SQLite file with another application's tables.
func foreignFile(t *testing.T, tables ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "theirs.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, name := range tables {
		if _, err := db.Exec("CREATE TABLE " + name + " (id INTEGER PRIMARY KEY, note TEXT)"); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// A file that holds another application's tables is refused, saying what
// was found and how to install anyway; with AllowForeign Docket installs
// beside them, and later opens need no flag.
func TestMigrateRefusesAForeignDatabase(t *testing.T) {
	path := foreignFile(t, "customers", "orders")
	_, err := sqlite.Open(t.Context(), path, sqlite.Options{Synchronous: "normal"})
	if !errors.Is(err, migration.ErrForeignDatabase) {
		t.Fatalf("open a foreign database: %v, want ErrForeignDatabase", err)
	}
	t.Logf("refusal: %v", err)
	for _, want := range []string{"has 2 tables (customers, orders)", "no docket_schema_migrations table", "--allow-foreign-database"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not say %q", err, want)
		}
	}
	st, err := sqlite.Open(t.Context(), path, sqlite.Options{Synchronous: "normal", AllowForeign: true})
	if err != nil {
		t.Fatalf("open with AllowForeign: %v", err)
	}
	st.Close()
	st, err = sqlite.Open(t.Context(), path, sqlite.Options{Synchronous: "normal"})
	if err != nil {
		t.Fatalf("reopen a Docket database that shares the file: %v", err)
	}
	st.Close()
}

// A failed migration names itself and SQLite's code; a file that is not a
// database says so.
func TestMigrateErrorsSayWhatWasFound(t *testing.T) {
	path := foreignFile(t, "tasks") // a name Docket's schema uses
	_, err := sqlite.Open(t.Context(), path, sqlite.Options{Synchronous: "normal", AllowForeign: true})
	t.Logf("clash: %v", err)
	if err == nil || !strings.Contains(err.Error(), "migration 001_schema.sql failed: sqlite error 1") {
		t.Errorf("clashing table: %v, want the migration and SQLite's code named", err)
	}
	if err != nil && strings.Contains(err.Error(), "already exists") {
		t.Errorf("the error carries SQLite's text: %v", err)
	}

	junk := filepath.Join(t.TempDir(), "junk.db")
	if err := os.WriteFile(junk, []byte(strings.Repeat("not a database ", 512)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = sqlite.Open(t.Context(), junk, sqlite.Options{Synchronous: "normal"})
	if err == nil || !strings.Contains(err.Error(), "not a SQLite database") || !strings.Contains(err.Error(), "SQLite code 26") {
		t.Errorf("open a file that is not a database: %v", err)
	}
}

// The storage-quota migration counts what an upgraded database keeps.
func TestStorageQuotaMigrationCountsWhatIsKept(t *testing.T) {
	path := filepath.Join(t.TempDir(), "docket.db")
	st, err := sqlite.Open(t.Context(), path, sqlite.Options{Synchronous: "normal"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	storetest.RunStorageBackfill(t, st, "migrations/007_storage_quota.sql", func(ctx context.Context, q string) error {
		_, err := db.ExecContext(ctx, q)
		return err
	})
}
