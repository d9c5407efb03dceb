package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/docket-dev/docket/internal/store"
)

// ErrorMap is how a backend reads its driver's errors; Map turns them into
// the store's, in one place per backend. Every error Map returns names the
// store operation (store.Operation). The database's own message stays in
// the wrapped chain for debugging, but callers branch on the sentinels and
// never log the text.
type ErrorMap struct {
	Backend string // store.BackendPostgres, store.BackendSQLite
	NoRows  error  // the driver's error for a row that is not there
	// Unavailable reports whether err means that the database could not be
	// reached or refused the operation for a transient reason.
	Unavailable func(err error) bool
	// Code returns the database's code of err (a SQLSTATE, a SQLite
	// extended result code), "" when it has none.
	Code func(err error) string
	// Corrupt, when set, reports whether err says the database file is
	// damaged: the *store.DatabaseError then wraps store.ErrCorrupt.
	Corrupt func(err error) bool
}

// Map maps err, returned by the store operation op: the store's own errors
// pass through, the driver's missing row is store.ErrNotFound, a
// cancellation stays one, a transient failure is store.ErrUnavailable, and
// anything else is a *store.DatabaseError, so that a bug never looks like
// an outage (a damaged database file among them: store.ErrCorrupt).
func (m *ErrorMap) Map(op string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrStaleLease), errors.Is(err, store.ErrInvalid),
		errors.Is(err, store.ErrUnavailable), errors.Is(err, store.ErrBusy):
		return store.Named(op, err)
	case errors.Is(err, m.NoRows):
		return &store.OpError{Op: op, Err: store.ErrNotFound}
	case errors.Is(err, context.Canceled):
		return &store.OpError{Op: op, Err: err}
	case m.Unavailable(err):
		return &store.OpError{Op: op, Err: fmt.Errorf("%w: %w", store.ErrUnavailable, err)}
	}
	if m.Corrupt != nil && m.Corrupt(err) {
		err = fmt.Errorf("%w: %w", store.ErrCorrupt, err)
	}
	return &store.DatabaseError{Op: op, Backend: m.Backend, Code: m.Code(err), Err: err}
}
