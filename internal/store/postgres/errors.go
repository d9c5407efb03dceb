package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/docket-dev/docket/internal/store"
)

// interpretError maps native errors onto the store's sentinels, in one place:
// a lost connection or a transient refusal is ErrUnavailable; any other
// database failure is a *store.DatabaseError carrying its SQLSTATE, so that
// a bug never looks like an outage. The database's own message stays in the
// wrapped chain for debugging, but callers branch on the sentinel and never
// log the text.
func interpretError(op string, err error) error {
	if err == nil {
		return nil
	}
	switch {
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrStaleLease),
		errors.Is(err, store.ErrInvalid), errors.Is(err, store.ErrUnavailable):
		return err
	case errors.Is(err, pgx.ErrNoRows):
		return fmt.Errorf("%s: %w", op, store.ErrNotFound)
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("%s: %w", op, err)
	case unavailable(err):
		return fmt.Errorf("%s: %w: %w", op, store.ErrUnavailable, err)
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return &store.DatabaseError{Op: op, Code: "SQLSTATE " + pe.Code, Err: err}
	}
	return &store.DatabaseError{Op: op, Code: "unknown", Err: err}
}

// unavailable reports whether err means the database could not be reached
// or refused the operation for a transient reason.
func unavailable(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err) ||
		errors.Is(err, pgconn.ErrConnClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, errRetry) {
		return true
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		if len(pe.Code) == 5 && pe.Code[:2] == "08" { // connection exception
			return true
		}
		switch pe.Code {
		case "57P01", "57P02", "57P03", // admin shutdown, crash shutdown, cannot connect now
			"53300",          // too many connections
			"57014",          // query canceled (statement_timeout)
			"55P03",          // lock not available (lock_timeout)
			"25006",          // read-only transaction: connected to a standby after a failover
			"40001", "40P01": // serialization failure, deadlock: still losing after the retries
			return true
		}
	}
	return false
}

// retryable reports whether PostgreSQL aborted the transaction only because
// it collided with another one, so that running it again may succeed.
func retryable(err error) bool {
	if errors.Is(err, errRetry) {
		return true
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "40001" || pe.Code == "40P01"
	}
	return false
}
