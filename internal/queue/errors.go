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
// returns, counting and logging it (see storefailure.Reporter). A missing
// task is not_found. The database's text never reaches the client or the
// log.
func (s *Service) storeFailure(ctx context.Context, op string, err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return dockettype.NewError(dockettype.CodeNotFound, "task not found")
	}
	return s.failures.Error(ctx, op, err)
}
