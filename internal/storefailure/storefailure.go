// Package storefailure classifies store errors, in one place, for every
// component that answers a client or logs a failed store call: the queue's
// API calls and schedulers, and the HTTP admin API. A failure is counted
// under the store operation that failed (store_errors_total's one label)
// and logged by code only: never the database's text.
//
//	r := storefailure.Reporter{Log: log, Errors: m.StoreErrors, RetryAfter: time.Second}
//	if err != nil {
//		return r.Error(ctx, "get_task", err) // a *dockettype.Error, or ctx's error
//	}
package storefailure

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// Class is what a failed store call means.
type Class struct {
	// Code is the failure's code: not_found, too_many_requests (every
	// connection of the store's pool is in use: store.ErrBusy),
	// internal (a refusal retrying cannot fix: a *store.DatabaseError,
	// store.ErrInvalid) or store_unavailable (anything else: an outage,
	// store.ErrUnavailable, a deadline, an error no backend mapped).
	Code dockettype.Code
	// Op is the store operation the error names ("" when it names none).
	Op string
	// Backend and DBCode are a database refusal's database and code.
	Backend, DBCode string
}

// Classify says what err, returned by a store call, means.
func Classify(err error) Class {
	c := Class{Op: store.Operation(err), Code: dockettype.CodeStoreUnavailable}
	de, refused := errors.AsType[*store.DatabaseError](err)
	switch {
	case errors.Is(err, store.ErrNotFound):
		c.Code = dockettype.CodeNotFound
	case refused: // whatever else the chain holds: the database refused
		c.Code, c.Backend, c.DBCode = dockettype.CodeInternal, de.Backend, de.Code
	case errors.Is(err, store.ErrInvalid):
		c.Code = dockettype.CodeInternal
	case errors.Is(err, store.ErrBusy):
		c.Code = dockettype.CodeTooManyRequests
	}
	return c
}

// Transient reports whether the failure may go away by itself (an outage,
// a saturated pool), so that the same call may succeed later.
func (c Class) Transient() bool {
	return c.Code == dockettype.CodeStoreUnavailable || c.Code == dockettype.CodeTooManyRequests
}

// Attrs are the log attributes of the failure: its code and, for a
// database refusal, the database and its code. Never the error's text.
func (c Class) Attrs() []any {
	attrs := []any{"code", c.Code}
	if c.DBCode != "" || c.Backend != "" {
		attrs = append(attrs, "db", c.Backend, "db_code", c.DBCode)
	}
	return attrs
}

// Attrs is Classify(err).Attrs().
func Attrs(err error) []any { return Classify(err).Attrs() }

// Reporter turns failed store calls into the errors a client is given,
// counting and logging each.
type Reporter struct {
	Log *slog.Logger
	// Errors is store_errors_total, labelled by store operation.
	Errors *prometheus.CounterVec
	// RetryAfter is how long a client is asked to wait when the store is
	// busy.
	RetryAfter time.Duration
}

// Count counts a failure of the store operation op in errors
// (store_errors_total): under the error's own operation when it names one
// (a backend's errors always do), so that the label means one thing, the
// store operation that failed, whichever component called it.
func Count(errors *prometheus.CounterVec, op string, err error) {
	if named := store.Operation(err); named != "" {
		op = named
	}
	errors.WithLabelValues(op).Inc()
}

// Error returns the client-safe error for err, returned by the store
// operation op. A *dockettype.Error passes through; when ctx has ended
// (the caller went away or ran out of time) ctx's error does, uncounted:
// not an outage. Otherwise the failure is counted (see Count), logged by
// code, and answered by code:
//
//   - not_found (store.ErrNotFound), neither counted nor logged;
//   - too_many_requests with RetryAfter (store.ErrBusy): the call waited
//     for a connection of the store's pool and never reached the database;
//   - internal (a database refusal, store.ErrInvalid): a bug must not look
//     like an outage;
//   - store_unavailable otherwise.
func (r *Reporter) Error(ctx context.Context, op string, err error) error {
	if de, ok := errors.AsType[*dockettype.Error](err); ok {
		return de
	}
	c := Classify(err)
	if c.Code == dockettype.CodeNotFound {
		return dockettype.NewError(dockettype.CodeNotFound, "not found")
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	Count(r.Errors, op, err)
	if c.Op == "" {
		c.Op = op
	}
	attrs := append(c.Attrs(), "op", c.Op)
	switch c.Code {
	case dockettype.CodeTooManyRequests:
		r.Log.WarnContext(ctx, "store busy: every connection in use", attrs...)
		return &dockettype.Error{Code: dockettype.CodeTooManyRequests, RetryAfter: r.RetryAfter,
			Message: "the store is busy; nothing was changed, retry later"}
	case dockettype.CodeInternal:
		r.Log.ErrorContext(ctx, "store refused the operation", attrs...)
		return dockettype.NewError(dockettype.CodeInternal, "internal error")
	}
	r.Log.WarnContext(ctx, "store operation failed", attrs...)
	return dockettype.NewError(dockettype.CodeStoreUnavailable, "the store is unavailable; nothing was changed, retry later")
}
