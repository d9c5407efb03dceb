package postgres

import (
	"context"
	"errors"
	"io"
	"net"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/store/engine"
)

// errorMap maps PostgreSQL's errors onto the store's (see engine.ErrorMap):
// a lost connection or a transient refusal is ErrUnavailable; any other
// database failure is a *store.DatabaseError carrying its SQLSTATE.
var errorMap = engine.ErrorMap{Backend: store.BackendPostgres, NoRows: pgx.ErrNoRows, Unavailable: unavailable, Code: sqlState}

func interpretError(op string, err error) error { return errorMap.Map(op, err) }

// sqlState is err's SQLSTATE, "" when PostgreSQL gave none.
func sqlState(err error) string {
	pe, _ := errors.AsType[*pgconn.PgError](err)
	if pe == nil {
		return ""
	}
	return pe.Code
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
			"53100",          // disk full
			"58030",          // I/O error
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
