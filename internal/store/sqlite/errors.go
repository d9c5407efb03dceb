package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"strconv"

	sqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/store/engine"
)

// errDBClosed is database/sql's (unexported) error for a closed *sql.DB.
const errDBClosed = "sql: database is closed"

// errorMap maps SQLite's errors onto the store's (see engine.ErrorMap): a
// lost handle, a busy, full or unreadable file is ErrUnavailable; any other
// failure is a *store.DatabaseError carrying SQLite's extended result code,
// a damaged file (SQLITE_CORRUPT, SQLITE_NOTADB) among them: retrying
// does not mend it, and the store reports it as store.ErrCorrupt.
var errorMap = engine.ErrorMap{Backend: store.BackendSQLite, NoRows: sql.ErrNoRows, Unavailable: unavailable, Code: resultCode,
	Corrupt: corrupt}

// resultCode is err's extended result code, "" when SQLite gave none.
func resultCode(err error) string {
	if se, ok := errors.AsType[*sqlite.Error](err); ok {
		return strconv.Itoa(se.Code())
	}
	return ""
}

func interpretError(op string, err error) error { return errorMap.Map(op, err) }

// unavailable reports whether err means the database could not be used for
// a reason that may pass: a closed handle, a busy, full or unreadable file.
func unavailable(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, driver.ErrBadConn) ||
		errors.Is(err, sql.ErrConnDone) || err.Error() == errDBClosed {
		return true
	}
	if se, ok := errors.AsType[*sqlite.Error](err); ok {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_IOERR,
			sqlite3.SQLITE_FULL, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_READONLY,
			sqlite3.SQLITE_PROTOCOL, sqlite3.SQLITE_INTERRUPT:
			return true
		}
	}
	return false
}

// corrupt reports whether err says the database file is damaged.
func corrupt(err error) bool {
	if se, ok := errors.AsType[*sqlite.Error](err); ok {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
			return true
		}
	}
	return false
}
