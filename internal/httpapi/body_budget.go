package httpapi

import (
	"fmt"
	"net/http"
	"runtime/debug"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/defaults"
)

// DefaultMaxBodyMemory bounds the bytes of request bodies the server reads
// and decodes at once when Options.MaxBodyMemory is 0.
const DefaultMaxBodyMemory = defaults.MaxBodyMemory

// bodyRetryAfter is the Retry-After of a body refused because the budget
// is full: bodies are read within seconds, or cut off by the body timeout.
const bodyRetryAfter = time.Second

// freeAfterBurst is the peak of reserved bytes (or a quarter of the
// budget, when smaller) past which the end of a burst (nothing reserved
// any more) returns the freed memory to the operating system; freeEvery
// spaces those returns.
const (
	freeAfterBurst = 64 << 20
	freeEvery      = time.Second
)

// bodyBudget bounds the bytes of request bodies held at once, server-wide.
// A request reserves its body's size before reading it (its Content-Length,
// or the route's limit when it sends none) and gives it back when the
// request ends: what its handler decoded from the body lives until then.
// A reservation that does not fit is refused at once, not queued: the
// client retries after Retry-After, and nothing waits holding a socket.
type bodyBudget struct {
	limit int64 // < 0: no bound
	clock clockwork.Clock
	gauge prometheus.Gauge
	free  func() // returns freed memory to the OS (debug.FreeOSMemory)

	mu       sync.Mutex
	used     int64
	peak     int64     // most used since memory was last returned
	lastFree time.Time // when memory was last returned
	freeing  bool      // a return is running
}

func newBodyBudget(limit int64, clock clockwork.Clock, gauge prometheus.Gauge, free func()) *bodyBudget {
	if free == nil {
		free = debug.FreeOSMemory
	}
	return &bodyBudget{limit: limit, clock: clock, gauge: gauge, free: free}
}

// acquire reserves n bytes, or reports false when they do not fit. A body
// larger than the whole budget fits when nothing else is reserved (it is
// then charged as the whole budget), so that the budget never refuses a
// body the size limits accept on an idle server.
func (b *bodyBudget) acquire(n int64) (int64, bool) {
	if b.limit < 0 || n <= 0 {
		return 0, true
	}
	n = min(n, b.limit)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.limit {
		return 0, false
	}
	b.used += n
	b.peak = max(b.peak, b.used)
	if b.gauge != nil {
		b.gauge.Add(float64(n))
	}
	return n, true
}

// release gives back n bytes acquired. When a burst ends (nothing reserved
// after a peak past freeAfterBurst), it returns the freed memory to the
// operating system in the background, at most once every freeEvery: the Go
// runtime would otherwise keep it mapped for minutes.
func (b *bodyBudget) release(n int64) {
	if n <= 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
	if b.gauge != nil {
		b.gauge.Sub(float64(n))
	}
	now := b.clock.Now()
	if b.used > 0 || b.peak < min(freeAfterBurst, b.limit/4) || b.freeing || now.Sub(b.lastFree) < freeEvery {
		return
	}
	b.peak, b.lastFree, b.freeing = 0, now, true
	go func() {
		b.free()
		b.mu.Lock()
		b.freeing = false
		b.mu.Unlock()
	}()
}

// reserveBody reserves the memory of r's body, bounded by limit, until the
// request ends. A body that declares more than limit is refused at once
// with payload_too_large, unread; when the budget is full the answer is
// too_many_requests with Retry-After.
func (s *server) reserveBody(r *http.Request, limit int64) error {
	if r.ContentLength > limit {
		return dockettype.NewError(dockettype.CodePayloadTooLarge, fmt.Sprintf("the request body is over %d bytes", limit))
	}
	info := infoFrom(r.Context())
	if info == nil || info.bodyReserved {
		return nil
	}
	n := limit // a body of unknown length may be as large as the limit
	if r.ContentLength >= 0 {
		n = r.ContentLength
	}
	got, ok := s.bodies.acquire(n)
	if !ok {
		return &dockettype.Error{Code: dockettype.CodeTooManyRequests, RetryAfter: bodyRetryAfter,
			Message: "the server is reading too many request bodies at once; nothing was changed, retry later"}
	}
	info.bodyReserved, info.bodyBytes = true, got
	return nil
}
