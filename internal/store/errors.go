package store

import (
	"errors"
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
	// ErrBusy: every connection of the store's pool was in use, and the
	// wait for one ended with the call's deadline. The database is
	// healthy but saturated: the call never reached it, nothing was
	// written, and a retry after a pause may succeed. Not an outage.
	ErrBusy = errors.New("store: busy")
	// ErrInvalid: the params break the contract (a caller bug).
	ErrInvalid = errors.New("store: invalid params")
	// ErrCorrupt: the database file is damaged (SQLite's SQLITE_CORRUPT,
	// SQLITE_NOTADB). It comes wrapped in a *DatabaseError (an internal
	// failure, not an outage: retrying does not help), and Ping reports it
	// from then on.
	ErrCorrupt = errors.New("store: database corrupt")
	// ErrWritesFailing: Ping's report that the store's writes fail (a
	// full disk, a read-only file) while it still answers reads.
	ErrWritesFailing = errors.New("store: writes failing")
)

// Backends, as DatabaseError.Backend names them.
const (
	BackendPostgres = "postgres"
	BackendSQLite   = "sqlite"
)

// DatabaseError is a database failure that is not an outage: a constraint,
// a bad value, a bug. Its Backend and Code are safe to log and count; the
// database's own message never is, and Error() does not carry it.
type DatabaseError struct {
	Op      string // the store operation, e.g. "list_tasks"
	Backend string // BackendPostgres or BackendSQLite
	// Code is the database's code alone: a SQLSTATE ("23505") or a SQLite
	// extended result code ("2067"); "" when the driver gave none.
	Code string
	Err  error // the driver's error, for debugging only
}

func (e *DatabaseError) Error() string {
	code := e.Code
	if code == "" {
		code = "unknown"
	}
	return e.Op + ": " + e.Backend + " error " + code
}
func (e *DatabaseError) Unwrap() error { return e.Err }

// OpError names the store operation that failed. Backends wrap every error
// they return in one (a DatabaseError names its own), so that a caller
// counts and logs a failure under the operation that failed, whichever
// component made the call.
type OpError struct {
	Op  string
	Err error
}

func (e *OpError) Error() string { return e.Op + ": " + e.Err.Error() }
func (e *OpError) Unwrap() error { return e.Err }

// Named returns err naming op, unless it names an operation already.
func Named(op string, err error) error {
	if Operation(err) != "" {
		return err
	}
	return &OpError{Op: op, Err: err}
}

// Operation returns the store operation err names (see OpError and
// DatabaseError), or "" when it names none.
func Operation(err error) string {
	if oe, ok := errors.AsType[*OpError](err); ok {
		return oe.Op
	}
	if de, ok := errors.AsType[*DatabaseError](err); ok {
		return de.Op
	}
	return ""
}
