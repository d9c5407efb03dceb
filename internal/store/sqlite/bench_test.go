package sqlite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/store/engine"
	"github.com/docket-dev/docket/internal/store/sqlite"
)

var benchNow = time.Date(2026, 10, 12, 9, 0, 0, 0, time.UTC)

func admitItems(n int, tenant string, prefix string) []*store.AdmitItem {
	items := make([]*store.AdmitItem, n)
	for i := range items {
		items[i] = &store.AdmitItem{
			TaskID: uuid.Must(uuid.NewV7()).String(), Tenant: tenant, Author: "bench", IdempotencyKey: fmt.Sprint(prefix, i),
			RequestHash: "h", Workflow: "demo.echo", Pool: dockettype.PoolOnline, MaxAttempts: 3,
			DeadlineAt: benchNow.Add(time.Hour), TraceID: "t", Input: []byte(`{"bench":true}`),
		}
	}
	return items
}

// openDurable opens a store with the production default (synchronous=full:
// every commit is fsync'd).
func openDurable(b *testing.B) *engine.Store {
	b.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "docket.db"), sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkAdmit measures admission per task with the durable default, one
// task per transaction and 100 per transaction (group commit).
func BenchmarkAdmit(b *testing.B) {
	for _, batch := range []int{1, 100} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			s := openDurable(b)
			defer s.Close()
			ctx := context.Background()
			b.ResetTimer()
			for i := 0; i < b.N; i += batch {
				if _, err := s.Admit(ctx, &store.AdmitParams{Now: benchNow, Items: admitItems(batch, "t", fmt.Sprint(i, "-"))}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tasks/s")
		})
	}
}

// BenchmarkClaimComplete measures claiming a batch and completing it (two
// transactions), with the durable default.
func BenchmarkClaimComplete(b *testing.B) {
	for _, batch := range []int{1, 64} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			s := openDurable(b)
			defer s.Close()
			ctx := context.Background()
			for i := 0; i < b.N+batch; i += 500 {
				if _, err := s.Admit(ctx, &store.AdmitParams{Now: benchNow, Items: admitItems(500, fmt.Sprint("t", i%7), fmt.Sprint(i, "-"))}); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for done := 0; done < b.N; {
				claimed, err := s.Claim(ctx, &store.ClaimParams{Now: benchNow, Queue: store.PoolQueue(dockettype.PoolOnline), Owner: "b", Limit: batch, LeaseTTL: time.Minute})
				if err != nil || len(claimed) == 0 {
					b.Fatalf("claim: %v (%d)", err, len(claimed))
				}
				items := make([]store.FinishItem, len(claimed))
				for i, c := range claimed {
					items[i] = store.FinishItem{Lease: c.Lease(), Kind: store.FinishSucceed, Result: c.Input}
				}
				if _, err := s.Finish(ctx, &store.FinishParams{Now: benchNow, Items: items}); err != nil {
					b.Fatal(err)
				}
				done += len(claimed)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tasks/s")
		})
	}
}
