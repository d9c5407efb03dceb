package store

import (
	"errors"
	"strings"
)

var (
	// ErrNotFound: the row does not exist or belongs to another tenant.
	ErrNotFound = errors.New("store: not found")
	// ErrStaleLease: a fenced write named a lease that is no longer current.
	ErrStaleLease = errors.New("store: stale lease")
	// ErrUnavailable: the database could not be reached or refused the
	// operation for a transient reason (connection loss, busy, timeout).
	// Nothing was written.
	ErrUnavailable = errors.New("store: unavailable")
	// ErrInvalid: the params break the contract (a caller bug).
	ErrInvalid = errors.New("store: invalid params")
)

// DatabaseError is a database failure that is not an outage: a constraint,
// a bad value, a bug. Its Code (a SQLSTATE, or a SQLite result code name)
// is safe to log and count; the database's own message never is, and
// Error() does not carry it.
type DatabaseError struct {
	Op   string // the store operation, e.g. "list_tasks"
	Code string // e.g. "SQLSTATE 22021", "SQLITE_CONSTRAINT"
	Err  error  // the driver's error, for debugging only
}

func (e *DatabaseError) Error() string { return e.Op + ": database error " + e.Code }
func (e *DatabaseError) Unwrap() error { return e.Err }

// DatabaseCode returns the database code of err (see DatabaseError), or ""
// when err carries none.
func DatabaseCode(err error) string {
	var de *DatabaseError
	if errors.As(err, &de) {
		return de.Code
	}
	return ""
}

// DatabaseLogCode is DatabaseCode in the form logs carry: the SQLSTATE
// ("23505") or the SQLite extended result code ("2067") alone, with no
// name or text that could be mistaken for, or grow into, a database
// message. "" when err carries no database code.
func DatabaseLogCode(err error) string {
	code := DatabaseCode(err)
	if i := strings.LastIndexByte(code, ' '); i >= 0 {
		return code[i+1:]
	}
	return code
}
