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
	var refusal error               // a refusal of the database as found
	var failed *migration.Migration // the migration that failed, if one did
	err = s.write(ctx, "migrate", func(tx *wtx) error {
		rows, err := tx.QueryContext(ctx, "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%' ORDER BY name")
		if err != nil {
			return err
		}
		var tables []string
		for rows.Next() {
			var name string
			if err := rows.Scan(&name); err != nil {
				rows.Close()
				return err
			}
			tables = append(tables, name)
		}
		if err := rows.Close(); err != nil {
			return err
		}
		has := func(name string) bool {
			for _, t := range tables {
				if t == name {
					return true
				}
			}
			return false
		}
		if has(migration.LegacyTable) {
			refusal = migration.ErrLegacySchema
			return refusal
		}
		if !has(migration.Table) {
			if refusal = migration.CheckForeign("the database", tables, allowForeign); refusal != nil {
				return refusal
			}
		}
		if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+migration.Table+` (
			version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL DEFAULT (datetime('now')))`); err != nil {
			return err
		}
		rows, err = tx.QueryContext(ctx, "SELECT version FROM "+migration.Table)
		if err != nil {
			return err
		}
		var applied []int
		for rows.Next() {
			var v int
			if err := rows.Scan(&v); err != nil {
				rows.Close()
				return err
			}
			applied = append(applied, v)
		}
		if err := rows.Close(); err != nil {
			return err
		}
		pending, err := migration.Pending(all, applied)
		if err != nil {
			refusal = err
			return err
		}
		for _, m := range pending {
			if _, err := tx.Tx.ExecContext(ctx, m.SQL); err != nil {
				failed = &m
				return err
			}
			if _, err := tx.ExecContext(ctx, "INSERT INTO "+migration.Table+" (version, name) VALUES (?, ?)", m.Version, m.Name); err != nil {
				return err
			}
		}
		return nil
	})
	return migrateError(err, refusal, failed)
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
