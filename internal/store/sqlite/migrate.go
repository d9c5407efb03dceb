package sqlite

import (
	"context"
	"embed"
	"fmt"

	"github.com/docket-dev/docket/internal/store/migration"
)

//go:embed migrations/*.sql
var migrations embed.FS

// migrate applies the pending migrations in one write transaction (the
// write gate and SQLite's lock keep another process from migrating at the
// same time).
func migrate(ctx context.Context, s *Backend) error {
	all, err := migration.Load(migrations, "migrations")
	if err != nil {
		return err
	}
	return s.write(ctx, "migrate", func(tx *wtx) error {
		var legacy int
		if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?",
			migration.LegacyTable).Scan(&legacy); err != nil {
			return err
		}
		if legacy > 0 {
			return migration.ErrLegacySchema
		}
		if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+migration.Table+` (
			version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL DEFAULT (datetime('now')))`); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, "SELECT version FROM "+migration.Table)
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
			return err
		}
		for _, m := range pending {
			if _, err := tx.Tx.ExecContext(ctx, m.SQL); err != nil {
				return fmt.Errorf("migration %s: %w", m.Name, err)
			}
			if _, err := tx.ExecContext(ctx, "INSERT INTO "+migration.Table+" (version, name) VALUES (?, ?)", m.Version, m.Name); err != nil {
				return err
			}
		}
		return nil
	})
}
