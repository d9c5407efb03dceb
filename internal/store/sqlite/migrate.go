package sqlite

import (
	"context"
	"embed"
	"errors"
	"fmt"

	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/store/migration"
)

//go:embed migrations/*.sql
var migrations embed.FS

// migrate applies the pending migrations in one write transaction (the
// write gate and SQLite's lock keep another process from migrating at the
// same time). A file that holds tables but no migration record is another
// application's: refused unless allowForeign. A refusal or a failed
// migration says what was found, by SQLite's code, never its text.
func migrate(ctx context.Context, s *Backend, allowForeign bool) error {
	all, err := migration.Load(migrations, "migrations")
	if err != nil {
		return err
	}
	var out migration.Outcome
	err = s.write(ctx, "migrate", func(tx *wtx) error {
		var err error
		out, err = migration.Run(all, "the database", allowForeign, migration.Steps{
			Tables: func() ([]string, error) {
				return queryList[string](ctx, tx,
					"SELECT name FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%' ORDER BY name")
			},
			CreateTable: func() error {
				_, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+migration.Table+` (
					version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL DEFAULT (datetime('now')))`)
				return err
			},
			Applied: func() ([]int, error) {
				return queryList[int](ctx, tx, "SELECT version FROM "+migration.Table)
			},
			Exec: func(m migration.Migration) error {
				_, err := tx.Tx.ExecContext(ctx, m.SQL)
				return err
			},
			Record: func(m migration.Migration) error {
				_, err := tx.ExecContext(ctx, "INSERT INTO "+migration.Table+" (version, name) VALUES (?, ?)", m.Version, m.Name)
				return err
			},
		})
		return err
	})
	return migrateError(err, out.Refusal, out.Failed)
}

// queryList reads one column of a query's rows.
func queryList[T any](ctx context.Context, tx *wtx, query string) ([]T, error) {
	rows, err := tx.QueryContext(ctx, query)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		var v T
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Close()
}

// migrateError is what a failed migration tells the operator: the refusal
// as it was decided, the migration that failed with SQLite's code, or a
// file that is not a database.
func migrateError(err, refusal error, failed *migration.Migration) error {
	if err == nil {
		return nil
	}
	if refusal != nil {
		return fmt.Errorf("sqlite: migrate: %w", refusal)
	}
	var de *store.DatabaseError
	code := ""
	if errors.As(err, &de) {
		code = de.Code
	}
	switch {
	case failed != nil:
		return fmt.Errorf("sqlite: %w: %w", migration.Failed(*failed, store.BackendSQLite, code), err)
	case errors.Is(err, store.ErrCorrupt):
		return fmt.Errorf("sqlite: migrate: the file is not a SQLite database, or it is damaged (SQLite code %s): %w", code, err)
	}
	return fmt.Errorf("sqlite: %w", err) // err names the operation: "migrate: …"
}
