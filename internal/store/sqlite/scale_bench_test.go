package sqlite_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

const benchTenants = 10

// seed puts n tasks of tenant into the store through its own operations,
// in large batches: "queued" leaves them ready, "running" claims them at
// claimAt (their leases expire a minute later), "succeeded" claims and
// finishes them. The store must hold no other ready task.
func seed(b *testing.B, s store.Store, tenant, state string, n int, deadline, claimAt time.Time) {
	b.Helper()
	ctx := context.Background()
	const batch = 5000
	for done := 0; done < n; done += batch {
		items := admitItems(min(batch, n-done), tenant, fmt.Sprint(tenant, "-", done, "-"))
		for _, it := range items {
			it.DeadlineAt = deadline
		}
		if _, err := s.Admit(ctx, &store.AdmitParams{Now: benchNow, Items: items}); err != nil {
			b.Fatal(err)
		}
		if state == "queued" {
			continue
		}
		claimed, err := s.Claim(ctx, &store.ClaimParams{Now: claimAt, Queue: store.PoolQueue(dockettype.PoolOnline), Owner: "seed", Limit: len(items), LeaseTTL: time.Minute})
		if err != nil || len(claimed) != len(items) {
			b.Fatalf("seed claim: %v (%d of %d)", err, len(claimed), len(items))
		}
		if state == "running" {
			continue
		}
		fin := make([]store.FinishItem, len(claimed))
		for i, c := range claimed {
			fin[i] = store.FinishItem{Lease: c.Lease(), Kind: store.FinishSucceed, Result: []byte("{}")}
		}
		if _, err := s.Finish(ctx, &store.FinishParams{Now: claimAt, Items: fin}); err != nil {
			b.Fatal(err)
		}
	}
}

// seedQueued spreads n ready tasks over benchTenants tenants.
func seedQueued(b *testing.B, s store.Store, n int) {
	b.Helper()
	for i := 0; i < benchTenants; i++ {
		seed(b, s, fmt.Sprint("tenant-", i), "queued", n/benchTenants, benchNow.Add(24*time.Hour), benchNow)
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
				claimed, err := s.Claim(ctx, &store.ClaimParams{Now: benchNow, Queue: store.PoolQueue(dockettype.PoolOnline), Owner: "b", Limit: 16, LeaseTTL: time.Minute})
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
			seed(b, s, "done", "succeeded", rows, benchNow.Add(time.Hour), benchNow)
			seed(b, s, "dead", "running", expired, benchNow.Add(time.Hour), benchNow.Add(-2*time.Minute))
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
			seed(b, s, "done", "succeeded", rows, benchNow.Add(time.Hour), benchNow)
			seed(b, s, "late", "queued", overdue, benchNow.Add(-time.Minute), benchNow)
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
