package storetest

import (
	"testing"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

func (su suite) testThroughput(t *testing.T) {
	// Tasks end at known times in each terminal state; the buckets count
	// each where its terminal event falls, and nothing else: not the
	// admissions, claims and retries, not what ended before the window or
	// at its end.
	su.run(t, "CountsTerminalEventsPerBucket", func(t *testing.T, s store.Store) {
		admitN(t, s, at(-time.Minute), tenantA, 9, nil)
		claimed := claim(t, s, at(-time.Second), dockettype.PoolOnline, 9)
		if len(claimed) != 9 {
			t.Fatalf("claimed %d, want 9", len(claimed))
		}
		late := newItem(tenantB)
		late.DeadlineAt = at(20 * time.Second)
		overdue := admitOne(t, s, at(-time.Second), late)
		cancelled := admitOne(t, s, at(-time.Second), newItem(tenantA))
		lease := func(i int) store.Lease { return claimed[i].Lease() }
		finishOne(t, s, at(-time.Millisecond), succeed(lease(0)), true) // before the window
		finishOne(t, s, at(0), succeed(lease(1)), true)                 // at its start
		finish(t, s, at(9999*ms), succeed(lease(2)), succeed(lease(3)))
		finishOne(t, s, at(10*time.Second), fail(lease(4), dockettype.CodeWorkflowError), true)
		finishOne(t, s, at(12*time.Second), retryAt(lease(5), at(time.Hour)), true) // queued again: not terminal
		finishOne(t, s, at(31*time.Second), succeed(lease(6)), true)
		finishOne(t, s, at(54999*ms), succeed(lease(7)), true)       // the last millisecond of the window
		finishOne(t, s, at(55*time.Second), succeed(lease(8)), true) // at its end: after it
		if got := findOverdue(t, s, at(21*time.Second), 10); len(got) != 1 || got[0].TaskID != overdue.ID {
			t.Fatalf("overdue = %+v, want %s", got, overdue.ID)
		} else {
			expireTasks(t, s, at(21*time.Second), got)
		}
		if res := cancel(t, s, at(40*time.Second), tenantA, cancelled.ID); !res.Changed {
			t.Fatalf("cancel of %s changed nothing", cancelled.ID)
		}

		got, err := s.Throughput(t.Context(), &store.ThroughputParams{Since: at(0), Until: at(55 * time.Second), Bucket: 10 * time.Second})
		if err != nil {
			t.Fatalf("Throughput: %v", err)
		}
		want := []store.ThroughputBucket{
			{Start: at(0), Succeeded: 3},
			{Start: at(10 * time.Second), Failed: 1},
			{Start: at(20 * time.Second), TimedOut: 1},
			{Start: at(30 * time.Second), Succeeded: 1},
			{Start: at(40 * time.Second), Cancelled: 1},
			{Start: at(50 * time.Second), Succeeded: 1},
		}
		wantBuckets(t, got, want)

		// Another window and bucket over the same events: one minute
		// buckets from before the first finish.
		got, err = s.Throughput(t.Context(), &store.ThroughputParams{Since: at(-time.Minute), Until: at(time.Minute), Bucket: time.Minute})
		if err != nil {
			t.Fatalf("Throughput: %v", err)
		}
		wantBuckets(t, got, []store.ThroughputBucket{
			{Start: at(-time.Minute), Succeeded: 1},
			{Start: at(0), Succeeded: 6, Failed: 1, TimedOut: 1, Cancelled: 1}, // the one at 55 s too
		})

		// A window where nothing ended: every bucket, empty.
		got, err = s.Throughput(t.Context(), &store.ThroughputParams{Since: at(time.Hour), Until: at(time.Hour + 3*time.Second), Bucket: time.Second})
		if err != nil {
			t.Fatalf("Throughput: %v", err)
		}
		wantBuckets(t, got, []store.ThroughputBucket{{Start: at(time.Hour)}, {Start: at(time.Hour + time.Second)}, {Start: at(time.Hour + 2*time.Second)}})
	})

	// A window the store cannot bound is refused before any read.
	su.run(t, "RefusesUnboundedWindows", func(t *testing.T, s store.Store) {
		for _, p := range []store.ThroughputParams{
			{Since: at(0), Until: at(time.Minute), Bucket: 0},
			{Since: at(0), Until: at(time.Minute), Bucket: -time.Second},
			{Since: at(0), Until: at(time.Minute), Bucket: 1500 * time.Microsecond},
			{Since: at(0), Until: at(0), Bucket: time.Second},
			{Since: at(time.Minute), Until: at(0), Bucket: time.Second},
			{Since: at(0), Until: at(time.Duration(store.MaxThroughputBuckets+1) * time.Second), Bucket: time.Second},
		} {
			_, err := s.Throughput(t.Context(), &p)
			wantErrIs(t, "Throughput of a window of "+p.Until.Sub(p.Since).String()+" by "+p.Bucket.String(), err, store.ErrInvalid)
		}
		got, err := s.Throughput(t.Context(), &store.ThroughputParams{Since: at(0),
			Until: at(time.Duration(store.MaxThroughputBuckets) * time.Second), Bucket: time.Second})
		if err != nil || len(got) != store.MaxThroughputBuckets {
			t.Fatalf("Throughput of the most buckets: %d buckets, %v", len(got), err)
		}
	})
}

func wantBuckets(t *testing.T, got, want []store.ThroughputBucket) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("buckets = %+v, want %+v", got, want)
	}
	for i := range want {
		g, w := got[i], want[i]
		if !g.Start.Equal(w.Start) || g.Succeeded != w.Succeeded || g.Failed != w.Failed || g.TimedOut != w.TimedOut || g.Cancelled != w.Cancelled {
			t.Errorf("bucket %d = %+v, want %+v", i, g, w)
		}
	}
}
