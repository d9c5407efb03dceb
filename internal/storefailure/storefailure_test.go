package storefailure_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/storefailure"
)

const secret = "duplicate key value violates unique constraint tasks_pkey"

func TestClassify(t *testing.T) {
	refusal := &store.DatabaseError{Op: "admit", Backend: store.BackendSQLite, Code: "2067", Err: errors.New(secret)}
	for _, tc := range []struct {
		name string
		err  error
		want storefailure.Class
	}{
		{"not found", &store.OpError{Op: "get_task", Err: store.ErrNotFound}, storefailure.Class{Code: dockettype.CodeNotFound, Op: "get_task"}},
		{"busy pool", &store.OpError{Op: "get_task", Err: fmt.Errorf("%w: waiting: %w", store.ErrBusy, context.DeadlineExceeded)},
			storefailure.Class{Code: dockettype.CodeTooManyRequests, Op: "get_task"}},
		{"outage", &store.OpError{Op: "claim", Err: store.ErrUnavailable}, storefailure.Class{Code: dockettype.CodeStoreUnavailable, Op: "claim"}},
		{"deadline", context.DeadlineExceeded, storefailure.Class{Code: dockettype.CodeStoreUnavailable}},
		{"refusal", fmt.Errorf("wrapped: %w", refusal),
			storefailure.Class{Code: dockettype.CodeInternal, Op: "admit", Backend: store.BackendSQLite, DBCode: "2067"}},
		{"invalid params", store.Named("cancel", store.ErrInvalid), storefailure.Class{Code: dockettype.CodeInternal, Op: "cancel"}},
		{"unmapped", errors.New("no backend said"), storefailure.Class{Code: dockettype.CodeStoreUnavailable}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := storefailure.Classify(tc.err); got != tc.want {
				t.Errorf("Classify(%v) = %+v, want %+v", tc.err, got, tc.want)
			}
		})
	}
}

// A busy store is 429 too_many_requests with Retry-After, counted under
// the operation the error names, logged by code; a refusal is internal
// with its database code in the log and never its text.
func TestReporter(t *testing.T) {
	var logs bytes.Buffer
	counter := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "store_errors_total"}, []string{"operation"})
	r := storefailure.Reporter{Log: slog.New(slog.NewJSONHandler(&logs, nil)), Errors: counter, RetryAfter: 2 * time.Second}
	ctx := context.Background()

	busy := &store.OpError{Op: "get_task", Err: store.ErrBusy}
	err := r.Error(ctx, "caller_name", busy)
	var de *dockettype.Error
	if !errors.As(err, &de) || de.Code != dockettype.CodeTooManyRequests || de.RetryAfter != 2*time.Second {
		t.Fatalf("busy store: %v, want too_many_requests after 2s", err)
	}
	if n := testutil.ToFloat64(counter.WithLabelValues("get_task")); n != 1 {
		t.Errorf("store_errors_total{get_task} = %v, want 1 (the operation the error names)", n)
	}

	err = r.Error(ctx, "admit", &store.DatabaseError{Op: "admit", Backend: store.BackendPostgres, Code: "23505", Err: errors.New(secret)})
	if !errors.As(err, &de) || de.Code != dockettype.CodeInternal || strings.Contains(de.Message, secret) {
		t.Fatalf("refusal: %v, want internal without the database's text", err)
	}
	if !strings.Contains(logs.String(), `"db_code":"23505"`) || !strings.Contains(logs.String(), `"db":"postgres"`) ||
		strings.Contains(logs.String(), secret) {
		t.Errorf("logs %s: want the database and its code, never its text", logs.String())
	}

	// Not counted: a caller that went away, a missing row, an answer
	// already made.
	gone, cancel := context.WithCancel(ctx)
	cancel()
	if err := r.Error(gone, "list_tasks", store.ErrUnavailable); !errors.Is(err, context.Canceled) {
		t.Errorf("caller gone: %v, want its context's error", err)
	}
	if err := r.Error(ctx, "get_task", store.ErrNotFound); dockettype.CodeOf(err) != dockettype.CodeNotFound {
		t.Errorf("not found: %v", err)
	}
	if n := testutil.CollectAndCount(counter); n != 2 {
		t.Errorf("%d labels counted, want 2 (get_task, admit)", n)
	}
}
