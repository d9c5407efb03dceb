package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/docket-dev/docket/internal/store"
)

func TestInterpretError(t *testing.T) {
	pg := func(code string) error {
		return fmt.Errorf("query: %w", &pgconn.PgError{Code: code, Message: "server text"})
	}
	for _, tc := range []struct {
		name      string
		err       error
		want      error // sentinel the result must match; nil: none of them
		retryable bool
	}{
		{"no rows", pgx.ErrNoRows, store.ErrNotFound, false},
		{"stale lease passes through", store.ErrStaleLease, store.ErrStaleLease, false},
		{"deadline", context.DeadlineExceeded, store.ErrUnavailable, false},
		{"cancelled by the caller", context.Canceled, nil, false},
		{"connection exception", pg("08006"), store.ErrUnavailable, false},
		{"admin shutdown", pg("57P01"), store.ErrUnavailable, false},
		{"too many connections", pg("53300"), store.ErrUnavailable, false},
		{"deadlock", pg("40P01"), store.ErrUnavailable, true},
		{"serialization failure", pg("40001"), store.ErrUnavailable, true},
		{"conn closed", pgconn.ErrConnClosed, store.ErrUnavailable, false},
		{"unique violation", pg("23505"), nil, false},
		{"check violation", pg("23514"), nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := interpretError("op", tc.err)
			for _, sentinel := range []error{store.ErrNotFound, store.ErrStaleLease, store.ErrUnavailable, store.ErrInvalid} {
				if is := errors.Is(got, sentinel); is != (sentinel == tc.want) {
					t.Errorf("interpretError(%v) = %v; errors.Is(%v) = %v", tc.err, got, sentinel, is)
				}
			}
			if tc.err != pgx.ErrNoRows && !errors.Is(got, tc.err) {
				t.Errorf("interpretError(%v) = %v, want the original error in the chain", tc.err, got)
			}
			if r := retryable(tc.err); r != tc.retryable {
				t.Errorf("retryable(%v) = %v, want %v", tc.err, r, tc.retryable)
			}
		})
	}
}

// An unreachable database is ErrUnavailable, and a malformed URL is not
// echoed back (it may hold a password).
func TestOpenErrors(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	_, err := Open(ctx, "postgres://docket:secret@127.0.0.1:1/docket?sslmode=disable&connect_timeout=2", Options{})
	if !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Open of an unreachable server: err = %v, want ErrUnavailable", err)
	}
	_, err = Open(ctx, "postgres://docket:secret@127.0.0.1:notaport/docket", Options{})
	if !errors.Is(err, store.ErrInvalid) || strings.Contains(err.Error(), "secret") {
		t.Errorf("Open of a malformed URL: err = %v, want ErrInvalid without the URL", err)
	}
}
