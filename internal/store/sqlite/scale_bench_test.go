package sqlite_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/store/sqlite"
)

const benchTenants = 10

// seedQueued spreads n ready tasks over benchTenants tenants.
func seedQueued(b *testing.B, s *sqlite.Store, n int) {
	b.Helper()
	for i := 0; i < benchTenants; i++ {
		err := sqlite.SeedTasks(context.Background(), s, fmt.Sprint("tenant-", i), "online", "queued", n/benchTenants,
			benchNow, time.Time{}, benchNow.Add(24*time.Hour))
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkClaimScale is the cost of one claim of 16 tasks with 10,000 and
// with 1,000,000 tasks queued across the same 10 tenants. The ratio of the
// two should be close to 1: the claim reads only the ready tenants and each
// chosen tenant's first tasks from a partial index.
func BenchmarkClaimScale(b *testing.B) {
	for _, queued := range []int{10_000, 1_000_000} {
		b.Run(fmt.Sprintf("queued=%d", queued), func(b *testing.B) {
			s := open(b)
			defer s.Close()
			seedQueued(b, s, queued)
			ctx := context.Background()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				claimed, err := s.Claim(ctx, &store.ClaimParams{Now: benchNow, Pool: dockettype.PoolOnline, Owner: "b", Limit: 16, LeaseTTL: time.Minute})
				if err != nil || len(claimed) != 16 {
					b.Fatalf("claim: %v (%d)", err, len(claimed))
				}
			}
		})
	}
}

// BenchmarkRecoveryScale is one recovery batch (scan of 500 expired leases
// plus the fenced write) in a table of 10,000 or 1,000,000 rows, most of them
// finished, some running with expired leases.
func BenchmarkRecoveryScale(b *testing.B) {
	for _, rows := range []int{10_000, 1_000_000} {
		b.Run(fmt.Sprintf("rows=%d", rows), func(b *testing.B) {
			s := open(b)
			defer s.Close()
			ctx := context.Background()
			expired := 500 * (b.N + 1)
			if err := sqlite.SeedTasks(ctx, s, "done", "online", "succeeded", rows, benchNow, time.Time{}, benchNow.Add(time.Hour)); err != nil {
				b.Fatal(err)
			}
			if err := sqlite.SeedTasks(ctx, s, "dead", "online", "running", expired, benchNow, benchNow.Add(-time.Minute), benchNow.Add(time.Hour)); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				found, err := s.FindExpiredLeases(ctx, &store.FindExpiredLeasesParams{Now: benchNow, Limit: 500})
				if err != nil || len(found) != 500 {
					b.Fatalf("find: %v (%d)", err, len(found))
				}
				if _, err := s.RecoverLeases(ctx, &store.RecoverLeasesParams{Now: benchNow, Items: found}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDeadlineScale is one deadline batch (scan of 500 overdue tasks
// plus the fenced write) in a table of 10,000 or 1,000,000 rows.
func BenchmarkDeadlineScale(b *testing.B) {
	for _, rows := range []int{10_000, 1_000_000} {
		b.Run(fmt.Sprintf("rows=%d", rows), func(b *testing.B) {
			s := open(b)
			defer s.Close()
			ctx := context.Background()
			overdue := 500 * (b.N + 1)
			if err := sqlite.SeedTasks(ctx, s, "done", "online", "succeeded", rows, benchNow, time.Time{}, benchNow.Add(-time.Hour)); err != nil {
				b.Fatal(err)
			}
			if err := sqlite.SeedTasks(ctx, s, "late", "online", "queued", overdue, benchNow, time.Time{}, benchNow.Add(-time.Minute)); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				found, err := s.FindOverdue(ctx, &store.FindOverdueParams{Now: benchNow, Limit: 500})
				if err != nil || len(found) != 500 {
					b.Fatalf("find: %v (%d)", err, len(found))
				}
				if _, err := s.ExpireTasks(ctx, &store.ExpireTasksParams{Now: benchNow, Items: found}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
