package postgres

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

//go:embed migrations/*.sql
var migrations embed.FS

// migrationLockClass is the first key of the advisory lock migrations take
// ("dock"); the second is a hash of the schema name, so that installations
// in different schemas do not wait for each other.
const migrationLockClass = 0x646f636b

// migrate creates the schema if needed and applies, in order, each embedded
// migration not yet recorded in docket_migrations, all in one transaction
// that holds a transaction-scoped advisory lock: nodes starting at once
// queue on the lock, and each one after the first finds nothing to do.
func migrate(ctx context.Context, s *Store, schema string) error {
	entries, err := fs.ReadDir(migrations, "migrations")
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	type migration struct {
		version int
		name    string
		body    string
	}
	var all []migration
	for _, e := range entries {
		version, err := strconv.Atoi(strings.SplitN(e.Name(), "_", 2)[0])
		if err != nil {
			return fmt.Errorf("migrate: bad migration name %q", e.Name())
		}
		body, err := migrations.ReadFile("migrations/" + e.Name())
		if err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		all = append(all, migration{version, e.Name(), string(body)})
	}

	return s.write(ctx, "migrate", func(tx pgx.Tx) error {
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
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS docket_migrations (
			version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, "SELECT version FROM docket_migrations")
		if err != nil {
			return err
		}
		applied, err := pgx.CollectRows(rows, pgx.RowTo[int])
		if err != nil {
			return err
		}
		done := make(map[int]bool, len(applied))
		for _, v := range applied {
			done[v] = true
		}
		for _, m := range all {
			if done[m.version] {
				continue
			}
			// Simple protocol: a migration is several statements.
			if _, err := tx.Exec(ctx, m.body, pgx.QueryExecModeSimpleProtocol); err != nil {
				return fmt.Errorf("migration %s: %w", m.name, err)
			}
			if _, err := tx.Exec(ctx, "INSERT INTO docket_migrations (version, name) VALUES ($1, $2)", m.version, m.name); err != nil {
				return err
			}
		}
		return nil
	})
}
