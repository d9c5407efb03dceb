// Package migration plans schema migrations for every SQL backend: it reads
// the embedded NNN_name.sql files, orders them, and works out which are
// pending. Each backend applies them in its own transaction and lock, and
// records them in the table docket_schema_migrations (version, name,
// applied_at).
package migration

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
)

// Table records the applied versions.
const Table = "docket_schema_migrations"

// LegacyTable is where development builds before the current schema kept
// their versions; a database that has it holds the old layout.
const LegacyTable = "docket_migrations"

var (
	// ErrNewerSchema: the database was migrated by a newer Docket than this
	// one. Running would read tables this build does not understand.
	ErrNewerSchema = errors.New("the database was migrated by a newer Docket; upgrade this binary")
	// ErrLegacySchema: the database was made by a pre-release development
	// build whose layout this build does not migrate.
	ErrLegacySchema = errors.New("the database was created by a pre-release development build of Docket; create a new database")
)

// Migration is one schema change.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Load reads the migrations in dir, in version order.
func Load(fsys fs.FS, dir string) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	var all []Migration
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".sql") {
			continue
		}
		prefix, _, ok := strings.Cut(name, "_")
		version, err := strconv.Atoi(prefix)
		if !ok || err != nil || version <= 0 {
			return nil, fmt.Errorf("migrations: bad file name %q (want NNN_name.sql)", name)
		}
		body, err := fs.ReadFile(fsys, path.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("migrations: %w", err)
		}
		all = append(all, Migration{Version: version, Name: name, SQL: string(body)})
	}
	slices.SortFunc(all, func(a, b Migration) int { return a.Version - b.Version })
	for i := 1; i < len(all); i++ {
		if all[i].Version == all[i-1].Version {
			return nil, fmt.Errorf("migrations: two files with version %d", all[i].Version)
		}
	}
	return all, nil
}

// Pending returns the migrations of all that are not applied, in order. A
// database that has a version all does not know was migrated by a newer
// build: ErrNewerSchema.
func Pending(all []Migration, applied []int) ([]Migration, error) {
	known := map[int]bool{}
	for _, m := range all {
		known[m.Version] = true
	}
	done := map[int]bool{}
	for _, v := range applied {
		if !known[v] {
			return nil, fmt.Errorf("schema version %d: %w", v, ErrNewerSchema)
		}
		done[v] = true
	}
	var out []Migration
	for _, m := range all {
		if !done[m.Version] {
			out = append(out, m)
		}
	}
	return out, nil
}
