package docket

import (
	"context"
	"errors"

	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/store/sqlite"
)

// StoreOptions tunes OpenStore.
type StoreOptions struct {
	SQLiteSynchronous string
}

// OpenStore opens the store named by dsn (a SQLite path or a postgres://
// URL) and applies pending migrations. It is internal plumbing shared by
// the server and the admin commands.
func OpenStore(ctx context.Context, dsn string, opts StoreOptions) (store.Store, error) {
	if IsPostgresURL(dsn) {
		return nil, errors.New("the PostgreSQL store is not available in this build yet; use a SQLite path")
	}
	return sqlite.Open(ctx, dsn, sqlite.Options{Synchronous: opts.SQLiteSynchronous})
}
