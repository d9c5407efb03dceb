package queue

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/logtest"
	"github.com/docket-dev/docket/internal/store/postgres/pgtest"
)

// shiftedClock is the real clock, shifted: a node whose clock is wrong.
type shiftedClock struct {
	clockwork.Clock
	by time.Duration
}

func (c shiftedClock) Now() time.Time                  { return c.Clock.Now().Add(c.by) }
func (c shiftedClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }
func (c shiftedClock) Until(t time.Time) time.Duration { return t.Sub(c.Now()) }

// TestExecutionServiceClockAheadStealsNoLease: on PostgreSQL, node B's
// clock runs 30 s ahead while node A holds a healthy, heartbeated lease.
// With clock sync (what docket serve does on PostgreSQL) B judges leases by
// the database's clock and recovers nothing; without it, B takes the lease
// from the healthy worker at its first recovery tick, which is the hazard
// the sync removes. Real clocks: the skew is between them and the
// database's.
func TestExecutionServiceClockAheadStealsNoLease(t *testing.T) {
	url := pgtest.URL(t)
	for _, tc := range []struct {
		name   string
		sync   bool
		stolen bool
	}{
		{"synced", true, false},
		{"unsynced", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			schema := pgtest.Schema(t, url)
			rt := newTestRuntime()
			hold := &gate{C: make(chan struct{})}
			started := make(chan int64, 4)
			rt.register("test.hold", dockettype.PoolOnline, func(ctx context.Context, inv *Invocation) (json.RawMessage, error) {
				started <- inv.Task.LeaseEpoch
				select {
				case <-hold.C:
				case <-ctx.Done():
				}
				return json.RawMessage(`"from a"`), nil
			})
			node := func(name string, clock clockwork.Clock, mutate func(*Config)) *harness {
				logger, _ := logtest.New(t)
				cfg := Config{
					NodeID: name, Clock: clock, Logger: logger, SyncClock: true, noJitter: true,
					LeaseTTL: 3 * time.Second, HeartbeatInterval: 500 * time.Millisecond, ShutdownGrace: time.Millisecond,
					RecoveryInterval: time.Hour, DeadlineInterval: time.Hour, Offline: PoolConfig{Workers: -1},
				}
				mutate(&cfg)
				svc := newTestService(t, pgtest.Open(t, url, schema), rt, cfg)
				return &harness{t: t, svc: svc, gates: []*gate{hold}}
			}
			real := clockwork.NewRealClock()
			a := node("node-a", real, func(c *Config) { c.Online = PoolConfig{Workers: 1} })
			b := node("node-b", shiftedClock{real, 30 * time.Second}, func(c *Config) {
				c.SyncClock = tc.sync
				c.Online = PoolConfig{Workers: -1}
				c.RecoveryInterval = 50 * time.Millisecond
			})
			tk := b.watchTicks()
			a.start()
			b.start()
			res, err := a.svc.Submit(context.Background(), alice, &SubmitRequest{IdempotencyKey: "held", Workflow: "test.hold", TimeoutMS: 600_000})
			if err != nil {
				t.Fatal(err)
			}
			if epoch := await(t, "the task to start on A", started); epoch != 1 {
				t.Fatalf("first start under epoch %d", epoch)
			}
			// Two seconds of B's recovery ticks: each would find the lease
			// expired by B's own clock, 30 s ahead.
			for range 40 {
				await(t, "B's recovery", tk.recovery)
			}
			recovered := testutil.ToFloat64(b.svc.metrics.LeasesRecovered.WithLabelValues("requeued"))
			if got := recovered > 0; got != tc.stolen {
				t.Fatalf("B recovered %v leases from a healthy worker; want stolen=%v", recovered, tc.stolen)
			}
			if tc.stolen {
				return
			}
			if got := a.get(alice, res.Task.ID); got.State != dockettype.StateRunning || got.LeaseEpoch != 1 {
				t.Fatalf("after B's recovery ticks: %s under epoch %d, want running under A's lease (1)", got.State, got.LeaseEpoch)
			}
			hold.open()
			if got := a.waitTerminal(alice, res.Task.ID, dockettype.StateSucceeded); string(got.Result) != `"from a"` {
				t.Fatalf("result %s, want A's", got.Result)
			}
		})
	}
}
