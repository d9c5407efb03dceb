package store

import "errors"

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
