package queue

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/docket-dev/docket/internal/metrics"
	"github.com/docket-dev/docket/internal/startstop"
	"github.com/docket-dev/docket/internal/storefailure"
)

// databaseClock is the store call the clock sync makes.
type databaseClock interface {
	DatabaseTime(ctx context.Context) (time.Time, error)
}

// syncedClock is the node's clock corrected by its measured offset to the
// database's clock. Lease expiries and deadlines are written and judged by
// every node against Now, so nodes that share a database judge them by one
// clock: a node whose own clock runs ahead cannot recover healthy leases
// early nor time tasks out early, and one that runs behind cannot make its
// leases look expired to the others. Durations (timers, tickers) are the
// node's own.
type syncedClock struct {
	clockwork.Clock
	offset atomic.Int64 // nanoseconds added to the node's clock
}

func (c *syncedClock) Now() time.Time                  { return c.Clock.Now().Add(time.Duration(c.offset.Load())) }
func (c *syncedClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }
func (c *syncedClock) Until(t time.Time) time.Duration { return t.Sub(c.Now()) }

// maxSampleRTT bounds the round trip of a usable sample: the database's
// time is taken as the midpoint of the call, so a slow call is imprecise.
const maxSampleRTT = 500 * time.Millisecond

// clockSync measures the offset every interval and sets it on the clock.
type clockSync struct {
	baseService // its clock is the node's own, uncorrected
	clock       *syncedClock
	store       databaseClock
	metrics     *metrics.Metrics
	interval    time.Duration
	warnAbove   time.Duration
	loop        startstop.Loop
}

// sample measures the offset once and applies it; it reports whether it
// could.
func (s *clockSync) sample(ctx context.Context) bool {
	qctx, cancel := context.WithTimeout(ctx, maxSampleRTT)
	defer cancel()
	before := s.baseService.clock.Now()
	db, err := s.store.DatabaseTime(qctx)
	after := s.baseService.clock.Now()
	if err != nil || after.Sub(before) > maxSampleRTT {
		// A sample too slow to use counts as a failed read of the
		// database's clock.
		storefailure.Count(s.metrics.StoreErrors, "database_time", err)
		return false
	}
	offset := db.Sub(before.Add(after.Sub(before) / 2))
	if old := time.Duration(s.clock.offset.Swap(int64(offset))); (offset > s.warnAbove || offset < -s.warnAbove) &&
		(old <= s.warnAbove && old >= -s.warnAbove) {
		s.log.WarnContext(ctx, "this node's clock differs from the database's; using the database's",
			"offset_ms", offset.Milliseconds())
	}
	s.metrics.ClockOffset.Set(offset.Seconds())
	return true
}

// startAttempts bounds the samples Start takes before it gives up.
const startAttempts = 10

// errClockUnsynced is Start's error when no sample was usable.
var errClockUnsynced = errors.New("queue: could not measure this node's clock offset to the database")

// syncAtStart sets the offset before anything reads the clock. A node must
// not judge leases or deadlines by its own clock, which may be far off, so
// a sample that fails or comes back slow (the first call on a new pool
// also opens its connection) is taken again, and the node does not start
// without one.
func (s *clockSync) syncAtStart(ctx context.Context) error {
	for range startAttempts {
		if s.sample(ctx) {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return errClockUnsynced
}

func (s *clockSync) Start(ctx context.Context) error { return s.loop.Start(ctx, s.run) }
func (s *clockSync) Stop()                           { s.loop.Stop() }

func (s *clockSync) run(ctx context.Context) {
	for {
		timer := s.baseService.clock.NewTimer(s.interval)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.Chan():
		}
		s.sample(ctx)
	}
}
