package metrics_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/metrics"
)

var t0 = time.Date(2026, 10, 12, 9, 0, 0, 0, time.UTC)

// The pool gauges come from one store read per second at most, however
// many scrapes ask, and show what the read said.
func TestQueueGauges(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	clock := clockwork.NewFakeClockAt(t0)
	oldest := t0.Add(-90 * time.Second)
	var reads atomic.Int64
	var fail atomic.Bool
	m.ObserveQueue(metrics.QueueGauges{
		Now: clock.Now,
		Read: func(ctx context.Context) (metrics.QueueRead, error) {
			reads.Add(1)
			if _, ok := ctx.Deadline(); !ok {
				t.Error("the store read has no timeout")
			}
			if fail.Load() {
				return metrics.QueueRead{}, errors.New("down")
			}
			return metrics.QueueRead{Pools: []metrics.PoolQueue{
				{Pool: dockettype.PoolOnline, Capacity: 200, InFlight: 50, Queued: 40, Running: 10, OldestQueuedAt: &oldest},
				{Pool: dockettype.PoolOffline, Capacity: 0, InFlight: 0},
			}, StoredBytes: 123456}, nil
		},
	})
	want := `
# HELP docket_pool_capacity Most non-terminal tasks a pool admits (pools with a capacity).
# TYPE docket_pool_capacity gauge
docket_pool_capacity{pool="online"} 200
# HELP docket_pool_capacity_in_use_ratio In-flight tasks of a pool over its capacity (0 to 1).
# TYPE docket_pool_capacity_in_use_ratio gauge
docket_pool_capacity_in_use_ratio{pool="online"} 0.25
# HELP docket_pool_in_flight Non-terminal tasks of a pool: what its capacity is checked against.
# TYPE docket_pool_in_flight gauge
docket_pool_in_flight{pool="offline"} 0
docket_pool_in_flight{pool="online"} 50
# HELP docket_pool_oldest_queued_age_seconds Age of the oldest task of a pool waiting to run (0 when none waits).
# TYPE docket_pool_oldest_queued_age_seconds gauge
docket_pool_oldest_queued_age_seconds{pool="offline"} 0
docket_pool_oldest_queued_age_seconds{pool="online"} 90
# HELP docket_pool_queued Tasks of a pool waiting to run (all nodes).
# TYPE docket_pool_queued gauge
docket_pool_queued{pool="offline"} 0
docket_pool_queued{pool="online"} 40
# HELP docket_pool_running Tasks of a pool running (all nodes).
# TYPE docket_pool_running gauge
docket_pool_running{pool="offline"} 0
docket_pool_running{pool="online"} 10
# HELP docket_stored_bytes Bytes of task inputs, results and evidence every tenant keeps (what storage quotas count), all nodes.
# TYPE docket_stored_bytes gauge
docket_stored_bytes 123456
`
	names := []string{"docket_pool_capacity", "docket_pool_capacity_in_use_ratio", "docket_pool_in_flight",
		"docket_pool_oldest_queued_age_seconds", "docket_pool_queued", "docket_pool_running", "docket_stored_bytes"}
	if err := testutil.GatherAndCompare(m.Registry, strings.NewReader(want), names...); err != nil {
		t.Fatal(err)
	}

	// Many concurrent scrapes within the second: still one read.
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if _, err := m.Registry.Gather(); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := reads.Load(); n != 1 {
		t.Fatalf("%d store reads for 21 scrapes within a second, want 1", n)
	}

	// A second later the store is read again; a failed read shows no pool
	// gauge, is counted, and is not retried within the second either.
	clock.Advance(time.Second)
	fail.Store(true)
	for range 3 {
		if n, err := testutil.GatherAndCount(m.Registry, names...); err != nil || n != 0 {
			t.Fatalf("after a failed read: %d pool samples (%v), want none", n, err)
		}
	}
	if n := reads.Load(); n != 2 {
		t.Fatalf("%d store reads, want 2", n)
	}
	if n := testutil.ToFloat64(m.StoreErrors.WithLabelValues("stats")); n != 1 {
		t.Fatalf("store_errors_total{operation=stats} = %v, want 1", n)
	}
}

// The lag gauge is the time since each scheduler's last success, or since
// it started.
func TestSchedulerLagGauge(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	clock := clockwork.NewFakeClockAt(t0)
	m.ObserveSchedulerLag(clock.Now)
	m.Schedulers.Started("recovery", t0)
	m.Schedulers.Started("deadline", t0)
	m.Schedulers.Ran("deadline", t0.Add(time.Second), true)
	m.Schedulers.Ran("deadline", t0.Add(2*time.Second), false)
	clock.Advance(5 * time.Second)
	want := `
# HELP docket_scheduler_lag_seconds Time since the scheduler's last successful tick on this node (since its start when none succeeded yet).
# TYPE docket_scheduler_lag_seconds gauge
docket_scheduler_lag_seconds{scheduler="deadline"} 4
docket_scheduler_lag_seconds{scheduler="recovery"} 5
`
	if err := testutil.GatherAndCompare(m.Registry, strings.NewReader(want), "docket_scheduler_lag_seconds"); err != nil {
		t.Fatal(err)
	}
	runs := m.Schedulers.Snapshot()
	if len(runs) != 2 || runs[0].Name != "deadline" || runs[0].Runs != 2 || runs[0].Failures != 1 ||
		!runs[0].LastRunAt.Equal(t0.Add(2*time.Second)) || !runs[0].LastSuccessAt.Equal(t0.Add(time.Second)) {
		t.Fatalf("snapshot = %+v", runs)
	}
}
