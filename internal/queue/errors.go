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
	if errors.Is(err, store.ErrInvalid) {
		s.log.ErrorContext(ctx, "store refused invalid params", "code", dockettype.CodeInternal, "op", op)
		return dockettype.NewError(dockettype.CodeInternal, "internal error")
	}
	// ErrUnavailable, and any error the backend could not classify: the
	// client cannot tell them apart and should retry either way.
	s.log.WarnContext(ctx, "store operation failed", "code", dockettype.CodeStoreUnavailable, "op", op)
	return dockettype.NewError(dockettype.CodeStoreUnavailable, "the task store is unavailable; nothing was changed, retry later")
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
