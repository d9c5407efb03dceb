package postgres

import (
	"context"
	"embed"
	"fmt"

	"github.com/jackc/pgx/v5"

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
// nothing to do.
func migrate(ctx context.Context, b *Backend, schema string) error {
	all, err := migration.Load(migrations, "migrations")
	if err != nil {
		return err
	}
	return b.write(ctx, "migrate", func(tx pgx.Tx) error {
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
		var legacy bool
		if err := tx.QueryRow(ctx, "SELECT to_regclass(quote_ident(current_schema()) || '.' || $1) IS NOT NULL", migration.LegacyTable).Scan(&legacy); err != nil {
			return err
		}
		if legacy {
			return migration.ErrLegacySchema
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+migration.Table+` (
			version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, "SELECT version FROM "+migration.Table)
		if err != nil {
			return err
		}
		applied, err := pgx.CollectRows(rows, pgx.RowTo[int])
		if err != nil {
			return err
		}
		pending, err := migration.Pending(all, applied)
		if err != nil {
			return err
		}
		for _, m := range pending {
			// Simple protocol: a migration is several statements.
			if _, err := tx.Exec(ctx, m.SQL, pgx.QueryExecModeSimpleProtocol); err != nil {
				return fmt.Errorf("migration %s: %w", m.Name, err)
			}
			if _, err := tx.Exec(ctx, "INSERT INTO "+migration.Table+" (version, name) VALUES ($1, $2)", m.Version, m.Name); err != nil {
				return err
			}
		}
		return nil
	})
}
