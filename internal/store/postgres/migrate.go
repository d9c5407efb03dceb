package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/store/migration"
)

//go:embed migrations/*.sql
var migrations embed.FS

// migrationLockClass is the first key of the advisory lock migrations take
// ("dock"); the second is a hash of the schema name, so that installations
// in different schemas do not wait for each other.
const migrationLockClass = 0x646f636b

// migrate creates the schema if needed and applies the pending migrations
// in one transaction that holds a transaction-scoped advisory lock: nodes
// starting at once queue on the lock, and each one after the first finds
// nothing to do. A schema that holds tables but no migration record is
// another application's: refused unless allowForeign. A refusal or a
// failed migration says what was found, by SQLSTATE, never the server's
// text.
func migrate(ctx context.Context, b *Backend, schema string, allowForeign bool) error {
	all, err := migration.Load(migrations, "migrations")
	if err != nil {
		return err
	}
	var out migration.Outcome
	err = b.write(ctx, "migrate", func(tx pgx.Tx) error {
		out = migration.Outcome{} // the transaction may run again
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1, hashtext($2))", migrationLockClass, schema); err != nil {
			return err
		}
		if schema != "" {
			// Create the schema only when it is missing: CREATE SCHEMA IF
			// NOT EXISTS needs the CREATE privilege even when it exists.
			var exists bool
			if err := tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)", schema).Scan(&exists); err != nil {
				return err
			}
			if !exists {
				if _, err := tx.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
					return err
				}
			}
		}
		var current string
		if err := tx.QueryRow(ctx, "SELECT coalesce(current_schema(), '')").Scan(&current); err != nil {
			return err
		}
		var err error
		out, err = migration.Run(all, fmt.Sprintf("schema %q", current), allowForeign, migration.Steps{
			// The relations of the schema Docket installs in (the search
			// path's first): tables, views, foreign tables.
			Tables: func() ([]string, error) {
				rows, err := tx.Query(ctx, `SELECT c.relname FROM pg_class c
					WHERE c.relnamespace = to_regnamespace(quote_ident(current_schema()))
						AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
					ORDER BY c.relname`)
				if err != nil {
					return nil, err
				}
				return pgx.CollectRows(rows, pgx.RowTo[string])
			},
			CreateTable: func() error {
				_, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+migration.Table+` (
					version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`)
				return err
			},
			Applied: func() ([]int, error) {
				rows, err := tx.Query(ctx, "SELECT version FROM "+migration.Table)
				if err != nil {
					return nil, err
				}
				return pgx.CollectRows(rows, pgx.RowTo[int])
			},
			// Simple protocol: a migration is several statements.
			Exec: func(m migration.Migration) error {
				_, err := tx.Exec(ctx, m.SQL, pgx.QueryExecModeSimpleProtocol)
				return err
			},
			Record: func(m migration.Migration) error {
				_, err := tx.Exec(ctx, "INSERT INTO "+migration.Table+" (version, name) VALUES ($1, $2)", m.Version, m.Name)
				return err
			},
		})
		return err
	})
	switch {
	case err == nil:
		return nil
	case out.Refusal != nil:
		return fmt.Errorf("postgres: migrate: %w", out.Refusal)
	case out.Failed != nil:
		var de *store.DatabaseError
		code := ""
		if errors.As(err, &de) {
			code = de.Code
		}
		return fmt.Errorf("postgres: %w: %w", migration.Failed(*out.Failed, store.BackendPostgres, code), err)
	}
	return fmt.Errorf("postgres: %w", err) // err names the operation: "migrate: …"
}
