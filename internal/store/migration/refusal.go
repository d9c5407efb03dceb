package migration

import (
	"errors"
	"fmt"
	"strings"
)

// ErrForeignDatabase: the database (PostgreSQL: the schema) holds tables
// but no migration record: it is not Docket's, and migrating would mix
// Docket's tables with another application's.
var ErrForeignDatabase = errors.New("not a Docket database")

// AllowForeignFlag is the flag of `docket serve` that installs Docket's
// tables in a database that holds other tables.
const AllowForeignFlag = "--allow-foreign-database"

// CheckForeign refuses to install Docket's tables where tables are (a
// database without Docket's migration record) unless allow. where names the
// place ("database", `schema "public"`), tables are the tables found there
// (sorted; a few are named in the refusal).
func CheckForeign(where string, tables []string, allow bool) error {
	if len(tables) == 0 || allow {
		return nil
	}
	shown := tables
	if len(shown) > 5 {
		shown = shown[:5]
	}
	more := ""
	if len(tables) > len(shown) {
		more = ", …"
	}
	return fmt.Errorf("%s has %d tables (%s%s) and no %s table: %w; refusing to install Docket's tables in it "+
		"(use an empty database, or pass %s to install them anyway)",
		where, len(tables), strings.Join(shown, ", "), more, Table, ErrForeignDatabase, AllowForeignFlag)
}

// Failed says which migration failed and why, by the database's code only
// (its message may quote SQL): "migration 001_schema.sql failed: postgres
// error 42P07 (duplicate_table: ...)".
func Failed(m Migration, backend, code string) error {
	what := backend + " error " + code
	if code == "" {
		what = backend + " error (no code)"
	}
	if hint, ok := hints[backend+"/"+code]; ok {
		what += " (" + hint + ")"
	}
	return fmt.Errorf("migration %s failed: %s", m.Name, what)
}

// hints explain the codes a migration meets most (backend/code).
var hints = map[string]string{
	"postgres/42P07": "duplicate_table: a table or index of the name Docket uses exists already",
	"postgres/42P06": "duplicate_schema: the schema exists already",
	"postgres/42710": "duplicate_object: an object of the name Docket uses exists already",
	"postgres/42723": "duplicate_function: a function of the name Docket uses exists already",
	"postgres/42501": "insufficient_privilege: the database user may not create tables or schemas here",
	"postgres/3F000": "invalid_schema_name: the schema does not exist",
	"postgres/25006": "read_only_sql_transaction: connected to a read-only server (a standby?)",
	"postgres/53100": "disk_full",
	"sqlite/1":       "SQLITE_ERROR: a table or index of the name Docket uses may exist already",
	"sqlite/8":       "SQLITE_READONLY: the file is read-only",
	"sqlite/13":      "SQLITE_FULL: the disk is full",
	"sqlite/26":      "SQLITE_NOTADB: the file is not a SQLite database",
}
