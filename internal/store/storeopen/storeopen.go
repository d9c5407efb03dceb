// Package storeopen opens the store a database string names: a SQLite file
// path, or a postgres:// URL. The server, the admin commands, the bench
// and the fault checker share it.
package storeopen

import (
	"context"

	"github.com/docket-dev/docket/internal/dsn"
	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/store/postgres"
	"github.com/docket-dev/docket/internal/store/sqlite"
)

// Options tunes Open.
type Options struct {
	SQLiteSynchronous string // SQLite only: full (default) or normal
	// AllowForeignDatabase installs Docket's tables in a database (a
	// PostgreSQL schema) that holds other tables and no Docket migration
	// record, which is refused otherwise.
	AllowForeignDatabase bool
}

// Open opens the store named by db and applies pending migrations.
func Open(ctx context.Context, db string, opts Options) (store.Store, error) {
	if dsn.IsPostgres(db) {
		return postgres.Open(ctx, db, postgres.Options{AllowForeign: opts.AllowForeignDatabase})
	}
	return sqlite.Open(ctx, db, sqlite.Options{Synchronous: opts.SQLiteSynchronous, AllowForeign: opts.AllowForeignDatabase})
}
