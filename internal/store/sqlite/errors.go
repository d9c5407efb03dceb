package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strconv"
	"strings"

	sqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/docket-dev/docket/internal/store"
)

// errDBClosed is database/sql's (unexported) error for a closed *sql.DB.
const errDBClosed = "sql: database is closed"

// interpretError maps native errors onto the store's sentinels, in one place.
// The database's own message stays in the wrapped chain for debugging but
// callers branch on the sentinel and never log the text.
func interpretError(op string, err error) error {
	if err == nil {
		return nil
	}
	switch {
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrStaleLease),
		errors.Is(err, store.ErrInvalid), errors.Is(err, store.ErrUnavailable):
		return err
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("%s: %w", op, store.ErrNotFound)
	case errors.Is(err, context.Canceled):
		return err
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, driver.ErrBadConn),
		errors.Is(err, sql.ErrConnDone), err.Error() == errDBClosed:
		return fmt.Errorf("%s: %w: %w", op, store.ErrUnavailable, err)
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_IOERR,
			sqlite3.SQLITE_FULL, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_READONLY,
			sqlite3.SQLITE_PROTOCOL, sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT,
			sqlite3.SQLITE_INTERRUPT:
			return fmt.Errorf("%s: %w: %w", op, store.ErrUnavailable, err)
		}
		// The map's text is a fixed description ending in the code's name,
		// e.g. "… (SQLITE_CONSTRAINT)": keep the name.
		name := "SQLITE " + strconv.Itoa(se.Code())
		if desc := sqlite.ErrorCodeString[se.Code()&0xff]; strings.HasSuffix(desc, ")") {
			if i := strings.LastIndexByte(desc, '('); i >= 0 {
				name = desc[i+1:len(desc)-1] + " " + strconv.Itoa(se.Code())
			}
		}
		return &store.DatabaseError{Op: op, Code: name, Err: err}
	}
	return &store.DatabaseError{Op: op, Code: "unknown", Err: err}
}
