package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/logtest"
	"github.com/docket-dev/docket/internal/store/sqlite"
)

// BenchmarkOnlineStartLatency measures, on the real clock and the durable
// SQLite default, the time from calling Submit to the online workflow
// starting (admission included), with the offline pool idle and with it flooded (every offline
// worker busy, a deep offline backlog, and more offline submissions
// arriving throughout). It reports p50 and p99.
func BenchmarkOnlineStartLatency(b *testing.B) {
	for _, flood := range []bool{false, true} {
		name := "offline=idle"
		if flood {
			name = "offline=flood"
		}
		b.Run(name, func(b *testing.B) {
			st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "d.db"), sqlite.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			logger, _ := logtest.New(b)
			rt := newTestRuntime()
			started := make(chan time.Time, 1)
			rt.register("bench.online", dockettype.PoolOnline, func(ctx context.Context, inv *Invocation) (json.RawMessage, error) {
				started <- time.Now()
				return nil, nil
			})
			rt.register("bench.offline", dockettype.PoolOffline, func(ctx context.Context, inv *Invocation) (json.RawMessage, error) {
				select {
				case <-time.After(20 * time.Millisecond):
				case <-ctx.Done():
				}
				return nil, nil
			})
			svc, err := New(st, rt, Config{Clock: clockwork.NewRealClock(), Logger: logger, ShutdownGrace: time.Second,
				Offline: PoolConfig{Capacity: 1_000_000}})
			if err != nil {
				b.Fatal(err)
			}
			if err := svc.Start(context.Background()); err != nil {
				b.Fatal(err)
			}
			defer svc.Stop()
			ctx := context.Background()
			stop := make(chan struct{})
			var wg sync.WaitGroup
			if flood {
				for i := 0; i < 2000; i++ {
					if _, err := svc.Submit(ctx, alice, &SubmitRequest{IdempotencyKey: fmt.Sprint("flood-", i), Workflow: "bench.offline"}); err != nil {
						b.Fatal(err)
					}
				}
				wg.Add(1)
				go func() { // more offline work keeps arriving
					defer wg.Done()
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						case <-time.After(5 * time.Millisecond):
							_, _ = svc.Submit(ctx, alice, &SubmitRequest{IdempotencyKey: fmt.Sprint("more-", i), Workflow: "bench.offline"})
						}
					}
				}()
			}
			var lat []time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				if _, err := svc.Submit(ctx, alice, &SubmitRequest{IdempotencyKey: fmt.Sprint("on-", i), Workflow: "bench.online"}); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, (<-started).Sub(t0))
			}
			b.StopTimer()
			close(stop)
			wg.Wait()
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50_µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99_µs")
		})
	}
}
