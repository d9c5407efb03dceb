package worker

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/docket-dev/docket/client"
)

// backoff spaces out retries of a failing call: exponential from 100ms to
// 5s with jitter, or the server's Retry-After when it gives one
// (overload: 429, 503).
type backoff struct{ d time.Duration }

func newBackoff() *backoff { return &backoff{d: 100 * time.Millisecond} }

func (b *backoff) reset() { b.d = 100 * time.Millisecond }

func (b *backoff) next(err error) time.Duration {
	var e *client.Error
	if errors.As(err, &e) && e.RetryAfter > 0 {
		return e.RetryAfter
	}
	d := b.d
	b.d = min(2*b.d, 5*time.Second)
	return d/2 + time.Duration(rand.Int64N(int64(d)))
}

// permanent reports whether retrying err cannot help: the server refused
// the key or the request itself.
func permanent(err error) bool {
	var e *client.Error
	if !errors.As(err, &e) {
		return false
	}
	switch e.StatusCode {
	case http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusRequestEntityTooLarge:
		return true
	}
	return false
}

// codeOf is the error's Docket code for logs, or a transport marker.
func codeOf(err error) string {
	var e *client.Error
	if errors.As(err, &e) && e.Code != "" {
		return e.Code
	}
	return "unreachable"
}

// retry calls fn until it succeeds, fails permanently, or ctx ends.
func retry(ctx context.Context, fn func() error) error {
	b := newBackoff()
	for {
		err := fn()
		if err == nil || permanent(err) {
			return err
		}
		if !sleep(ctx, b.next(err)) {
			return err
		}
	}
}

// sleep waits d, or less when ctx ends first (then false).
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
