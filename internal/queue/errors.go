package queue

import (
	"context"
	"errors"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// Causes given to a worker's context when Docket stops it. A workflow that
// returns because of one of them has not failed: the task's state was
// already decided elsewhere (or, for errShutdown, its lease is handed back).
var (
	errCancelled = errors.New("task cancelled")
	errTimedOut  = errors.New("task deadline passed")
	errLeaseLost = errors.New("lease lost")
	errShutdown  = errors.New("node shutting down")
)

// storeFailure turns a store error into the client-safe error the API
// returns, counting it. The database's text never reaches the client or
// the log.
func (s *Service) storeFailure(ctx context.Context, op string, err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return dockettype.NewError(dockettype.CodeNotFound, "task not found")
	}
	if ctx.Err() != nil {
		// The caller went away or ran out of time: not an outage.
		return ctx.Err()
	}
	s.metrics.StoreErrors.WithLabelValues(op).Inc()
	if dbCode := store.DatabaseCode(err); dbCode != "" {
		// The database refused the operation for a reason retrying cannot
		// fix (a constraint, a bad value: a bug), which must not look like
		// an outage. Its code (a SQLSTATE, a SQLite result code) is logged;
		// its text never is.
		s.log.ErrorContext(ctx, "store refused the operation", "code", dockettype.CodeInternal, "op", op, "db_code", store.DatabaseLogCode(err))
		return dockettype.NewError(dockettype.CodeInternal, "internal error")
	}
	if errors.Is(err, store.ErrInvalid) {
		s.log.ErrorContext(ctx, "store refused invalid params", "code", dockettype.CodeInternal, "op", op)
		return dockettype.NewError(dockettype.CodeInternal, "internal error")
	}
	// ErrUnavailable: the backends map every other failure to it or to a
	// DatabaseError, so this is a lost connection or a transient refusal.
	s.log.WarnContext(ctx, "store operation failed", "code", dockettype.CodeStoreUnavailable, "op", op)
	return dockettype.NewError(dockettype.CodeStoreUnavailable, "the task store is unavailable; nothing was changed, retry later")
}

// storeErrorAttrs are the log attributes of a failed store call: its code
// (storeErrorCode) and, for a database refusal, the database's code
// (store.DatabaseLogCode). Never the error's text.
func storeErrorAttrs(err error) []any {
	attrs := []any{"code", storeErrorCode(err)}
	if dc := store.DatabaseLogCode(err); dc != "" {
		attrs = append(attrs, "db_code", dc)
	}
	return attrs
}

// storeErrorCode is the code a component logs for a failed store call: an
// outage is store_unavailable; anything else is a refusal that retrying
// cannot fix, internal (a bug must not look like an outage).
func storeErrorCode(err error) dockettype.Code {
	if isTransient(err) {
		return dockettype.CodeStoreUnavailable
	}
	return dockettype.CodeInternal
}
