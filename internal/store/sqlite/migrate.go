package sqlite

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
)

//go:embed migrations/*.sql
var migrations embed.FS

// migrate applies, in order, each embedded migration not yet recorded in
// docket_migrations, one transaction per file.
func migrate(ctx context.Context, s *Store) error {
	if _, err := s.w.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS docket_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL DEFAULT (datetime('now')))`); err != nil {
		return interpretError("migrate", err)
	}
	entries, err := fs.ReadDir(migrations, "migrations")
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	for _, e := range entries {
		version, err := strconv.Atoi(strings.SplitN(e.Name(), "_", 2)[0])
		if err != nil {
			return fmt.Errorf("migrate: bad migration name %q", e.Name())
		}
		body, err := migrations.ReadFile("migrations/" + e.Name())
		if err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		err = s.write(ctx, "migrate", func(tx *wtx) error {
			var n int
			if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM docket_migrations WHERE version = ?", version).Scan(&n); err != nil {
				return err
			}
			if n > 0 {
				return nil
			}
			if _, err := tx.ExecContext(ctx, string(body)); err != nil {
				return fmt.Errorf("migration %s: %w", e.Name(), err)
			}
			_, err := tx.ExecContext(ctx, "INSERT INTO docket_migrations (version, name) VALUES (?, ?)", version, e.Name())
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}
