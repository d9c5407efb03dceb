package storetest

import (
	"fmt"
	"sync"
	"testing"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// handleSet is how concurrent callers reach the database: one shared store,
// or several forks as several nodes or schedulers would.
type handleSet struct {
	name    string
	handles func(t *testing.T, s store.Store) []store.Store
}

var handleSets = []handleSet{
	{"SameStore", func(t *testing.T, s store.Store) []store.Store { return []store.Store{s} }},
	{"Forks", func(t *testing.T, s store.Store) []store.Store {
		hs := make([]store.Store, 4)
		for i := range hs {
			hs[i] = fork(t, s, fmt.Sprintf("admit-%d", i), 4)
		}
		return hs
	}},
}

// admitConcurrently admits each item from its own goroutine, all released
// at once, and returns the outcomes by item index.
func admitConcurrently(t *testing.T, hs []store.Store, items []*store.AdmitItem) []store.AdmitResult {
	t.Helper()
	results := make([]store.AdmitResult, len(items))
	errs := make([]error, len(items))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, it := range items {
		wg.Go(func() {
			<-start
			res, err := hs[i%len(hs)].Admit(t.Context(), &store.AdmitParams{Now: at(0), Items: []*store.AdmitItem{it}})
			if err == nil && len(res) != 1 {
				err = fmt.Errorf("%d results for 1 item", len(res))
			}
			if err != nil {
				errs[i] = err
				return
			}
			results[i] = res[0]
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Admit from goroutine %d: %v", i, err)
		}
	}
	return results
}

func countOutcomes(results []store.AdmitResult) map[store.AdmitOutcome]int {
	n := map[store.AdmitOutcome]int{}
	for _, r := range results {
		n[r.Outcome]++
	}
	return n
}

func (su suite) testAdmitConcurrency(t *testing.T) {
	t.Run("SameKey", func(t *testing.T) {
		for _, hset := range handleSets {
			su.run(t, hset.name, func(t *testing.T, s store.Store) {
				const n = 64
				proto := newItem(tenantA)
				items := make([]*store.AdmitItem, n)
				for i := range items {
					items[i] = retry(proto)
				}
				results := admitConcurrently(t, hset.handles(t, s), items)

				got := countOutcomes(results)
				if got[store.Admitted] != 1 || got[store.Replayed] != n-1 {
					t.Fatalf("outcomes = %v, want 1 admitted and %d replayed", got, n-1)
				}
				var winner string
				for i, r := range results {
					if r.Outcome == store.Admitted {
						winner = items[i].TaskID
					}
				}
				for i, r := range results {
					if r.Task == nil || r.Task.ID != winner {
						t.Errorf("goroutine %d (%v): task %v, want the one admitted task %s", i, r.Outcome, r.Task, winner)
					}
				}
				tasks := listTasks(t, s, &store.ListTasksParams{Tenant: tenantA, Limit: 2 * n})
				if len(tasks) != 1 || tasks[0].ID != winner {
					t.Errorf("tasks of the tenant = %v, want only %s", taskIDs(tasks), winner)
				}
				wantUsage(t, s, dockettype.PoolOnline, 1, tenantA, 1)
			})
		}
	})

	for _, tc := range []struct {
		name    string
		limit   func(t *testing.T, s store.Store, items []*store.AdmitItem, n int)
		refusal store.AdmitOutcome
	}{
		{"PoolCapacity", func(t *testing.T, s store.Store, items []*store.AdmitItem, n int) {
			for _, it := range items {
				it.PoolCapacity = n
			}
		}, store.QueueFull},
		{"TenantQuota", func(t *testing.T, s store.Store, items []*store.AdmitItem, n int) {
			setLimits(t, s, tenantA, n, 1)
		}, store.TenantQuotaExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, hset := range handleSets {
				su.run(t, hset.name, func(t *testing.T, s store.Store) {
					const n = 8
					items := make([]*store.AdmitItem, 4*n)
					for i := range items {
						items[i] = newItem(tenantA)
					}
					tc.limit(t, s, items, n)
					results := admitConcurrently(t, hset.handles(t, s), items)

					got := countOutcomes(results)
					if got[store.Admitted] != n || got[tc.refusal] != 3*n {
						t.Errorf("outcomes = %v, want %d admitted and %d %v", got, n, 3*n, tc.refusal)
					}
					tasks := listTasks(t, s, &store.ListTasksParams{Tenant: tenantA, Limit: 8 * n})
					if len(tasks) != n {
						t.Errorf("tenant has %d tasks, want %d", len(tasks), n)
					}
					wantUsage(t, s, dockettype.PoolOnline, n, tenantA, n)
				})
			}
		})
	}
}
