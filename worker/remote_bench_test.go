package worker_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/docket-dev/docket"
	"github.com/docket-dev/docket/client"
	"github.com/docket-dev/docket/internal/store/postgres/pgtest"
	"github.com/docket-dev/docket/worker"
)

// benchStores are the databases the benchmarks run on: SQLite always,
// PostgreSQL when DOCKET_TEST_POSTGRES_URL is set.
func benchStores() []string {
	if os.Getenv("DOCKET_TEST_POSTGRES_URL") != "" {
		return []string{"sqlite", "postgres"}
	}
	return []string{"sqlite"}
}

// newBenchEnv is newEnv on a database of the kind (postgres: a database
// of its own, dropped at the end).
func newBenchEnv(b *testing.B, kind string, cfg docket.Config) *env {
	if kind == "sqlite" {
		return newEnv(b, cfg)
	}
	cfg.DB = pgtest.Database(b, pgtest.URL(b))
	return newEnvOn(b, cfg)
}

// BenchmarkRemoteStartLatency measures, on the real clock, how long an
// idle Go SDK worker (its claim long-polling on the server) takes to start
// a task: from calling Submit (admission over HTTP included) until the
// handler runs. Each task is submitted once the previous one finished and
// the worker is back in its long poll. It reports p50 and p99 in
// microseconds.
func BenchmarkRemoteStartLatency(b *testing.B) {
	for _, kind := range benchStores() {
		b.Run("store="+kind, func(b *testing.B) {
			e := newBenchEnv(b, kind, docket.Config{})
			e.register("bench.latency", 1)
			started := make(chan time.Time, 1)
			w := worker.New(e.srv.URL(), e.worker, worker.Options{Slots: 10, Wait: 30 * time.Second})
			w.Handle("bench.latency", func(context.Context, *worker.Task) (any, error) {
				started <- time.Now()
				return nil, nil
			})
			stop := run(b, w)
			defer stop()
			ctx := context.Background()
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				t0 := time.Now()
				res, err := e.admin.Submit(ctx, &client.SubmitParams{IdempotencyKey: fmt.Sprint("lat-", i), Workflow: "bench.latency"})
				if err != nil {
					b.Fatal(err)
				}
				lat = append(lat, (<-started).Sub(t0))
				b.StopTimer()
				// The worker is idle again before the next submit: its
				// finish written, and its claim long-polling (after a claim
				// thinner than its free slots the SDK pauses up to 20 ms
				// before it claims again).
				if _, err := e.admin.Wait(ctx, res.Task.ID, 10*time.Second); err != nil {
					b.Fatal(err)
				}
				time.Sleep(30 * time.Millisecond)
				b.StartTimer()
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50_µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99_µs")
		})
	}
}

// BenchmarkRemoteHeartbeatCost measures what heartbeats cost the database
// with 10,000 remote tasks running at once (10 Go SDK workers of 1,000
// slots, PostgreSQL, the remote heartbeat interval of 1 s): the transactions the
// database committed (pg_stat_database.xact_commit of the server's own
// database) over ten intervals with every task running and nothing else
// to do, against ten intervals of the same server before any worker or
// task existed (its schedulers and idle pools commit on their own). It
// reports both, the heartbeat calls the workers made (counted by their
// HTTP client), and the difference per worker and interval and per call:
// the target is at most 1, one transaction per heartbeat call, not one per
// lease.
func BenchmarkRemoteHeartbeatCost(b *testing.B) {
	if os.Getenv("DOCKET_TEST_POSTGRES_URL") == "" {
		b.Skip("DOCKET_TEST_POSTGRES_URL is not set")
	}
	const (
		workers = 10
		slots   = 1000
		tasks   = workers * slots
		beat    = time.Second
		windows = 10
	)
	for range b.N {
		e := newBenchEnv(b, "postgres", docket.Config{LeaseTTL: 30 * beat,
			OnlineCapacity: 2 * tasks, DefaultTenantLimit: docket.Unlimited})
		b.StopTimer()
		e.register("bench.hold", 1)
		conn, err := pgx.Connect(context.Background(), e.db)
		if err != nil {
			b.Fatal(err)
		}
		commits := func() int64 {
			var n int64
			if _, err := conn.Exec(context.Background(), "SELECT pg_stat_clear_snapshot()"); err != nil {
				b.Fatal(err)
			}
			if err := conn.QueryRow(context.Background(), "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()").Scan(&n); err != nil {
				b.Fatal(err)
			}
			return n
		}
		// window counts the commits of ten intervals, less its own two
		// reads (two statements each), after letting earlier stats flush.
		window := func() int64 {
			time.Sleep(2 * beat)
			before := commits()
			time.Sleep(windows * beat)
			return commits() - before - 4
		}
		idle := window()
		var running, beats atomic.Int64
		hc := &http.Client{Transport: countBeats{http.DefaultTransport, &beats}}
		release := make(chan struct{})
		var stops []func() error
		for i := range workers {
			w := worker.New(e.srv.URL(), e.worker, worker.Options{Slots: slots, WorkerID: fmt.Sprint("hb-", i), ShutdownGrace: 30 * time.Second, HTTPClient: hc})
			w.Handle("bench.hold", func(ctx context.Context, _ *worker.Task) (any, error) {
				running.Add(1)
				select {
				case <-release:
				case <-ctx.Done():
				}
				return nil, nil
			})
			stops = append(stops, run(b, w))
		}
		ctx := context.Background()
		for i := 0; i < tasks; i += client.MaxBatchItems {
			var items []*client.SubmitParams
			for j := i; j < i+client.MaxBatchItems; j++ {
				items = append(items, &client.SubmitParams{IdempotencyKey: fmt.Sprint("hold-", j), Workflow: "bench.hold", TimeoutMS: 600_000})
			}
			res, err := e.admin.SubmitBatch(ctx, &client.SubmitBatchParams{Tasks: items})
			if err != nil {
				b.Fatal(err)
			}
			for _, r := range res {
				if r.Task == nil {
					b.Fatalf("a batch item was refused: %+v", r)
				}
			}
		}
		for deadline := time.Now().Add(2 * time.Minute); running.Load() < tasks; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				b.Fatalf("%d of %d tasks running after 2 minutes", running.Load(), tasks)
			}
		}
		beats.Store(0)
		busy := window()
		calls := beats.Load()
		conn.Close(context.Background())
		b.ReportMetric(float64(idle)/windows, "idle_xacts/interval")
		b.ReportMetric(float64(busy)/windows, "busy_xacts/interval")
		b.ReportMetric(float64(busy-idle)/float64(workers*windows), "xacts/worker/interval")
		b.ReportMetric(float64(calls)/float64(workers*windows), "heartbeats/worker/interval")
		if calls > 0 {
			b.ReportMetric(float64(busy-idle)/float64(calls), "xacts/heartbeat")
		}
		close(release)
		var wg sync.WaitGroup
		for _, stop := range stops {
			wg.Go(func() { _ = stop() })
		}
		wg.Wait()
	}
}

// countBeats counts the heartbeat calls that go through it.
type countBeats struct {
	rt http.RoundTripper
	n  *atomic.Int64
}

func (c countBeats) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Path == "/v1/worker/heartbeat" {
		c.n.Add(1)
	}
	return c.rt.RoundTrip(r)
}
