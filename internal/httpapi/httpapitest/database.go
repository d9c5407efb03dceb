package httpapitest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/store/postgres/pgtest"
	"github.com/docket-dev/docket/internal/store/sqlite"
)

// Database is one test database. Each Open is a new handle on it, as
// another node would have, closed when t ends.
type Database struct {
	Name string // "sqlite" or "postgres"
	Open func(t testing.TB) store.Store
}

// ForEachDatabase runs run as a subtest on a fresh SQLite database and,
// when DOCKET_TEST_POSTGRES_URL is set, on a fresh PostgreSQL schema. Pass
// db.Open(t) as Options.Store.
func ForEachDatabase(t *testing.T, run func(t *testing.T, db Database)) {
	t.Helper()
	t.Run("sqlite", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "d.db")
		run(t, Database{Name: "sqlite", Open: func(t testing.TB) store.Store {
			t.Helper()
			st, err := sqlite.Open(context.Background(), path, sqlite.Options{Synchronous: "normal"})
			if err != nil {
				t.Fatalf("open SQLite store: %v", err)
			}
			t.Cleanup(func() { _ = st.Close() })
			return st
		}})
	})
	t.Run("postgres", func(t *testing.T) {
		url := pgtest.URL(t)
		schema := pgtest.Schema(t, url)
		run(t, Database{Name: "postgres", Open: func(t testing.TB) store.Store {
			t.Helper()
			return pgtest.Open(t, url, schema)
		}})
	})
}
