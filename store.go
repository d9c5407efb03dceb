package docket

import (
	"context"

	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/store/postgres"
	"github.com/docket-dev/docket/internal/store/sqlite"
)

// StoreOptions tunes OpenStore.
type StoreOptions struct {
	SQLiteSynchronous string // SQLite only: full (default) or normal
}

// OpenStore opens the store named by dsn — a SQLite file path, or a
// postgres:// URL — and applies pending migrations. It is the plumbing the
// server and the admin commands share.
func OpenStore(ctx context.Context, dsn string, opts StoreOptions) (store.Store, error) {
	if IsPostgresURL(dsn) {
		return postgres.Open(ctx, dsn, postgres.Options{})
	}
	return sqlite.Open(ctx, dsn, sqlite.Options{Synchronous: opts.SQLiteSynchronous})
}
