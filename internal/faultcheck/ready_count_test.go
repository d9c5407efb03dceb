package faultcheck

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/store/postgres/pgtest"
	"github.com/docket-dev/docket/internal/store/sqlite"
)

// TestReadyCountKeepsEveryQueuedTaskClaimable guards against a bug `docket
// faultcheck` found on PostgreSQL (clock-skew and pg-restart scenarios: a
// task queued, never claimed, timed out by its deadline two minutes
// later). The claim of that time, when it picked fewer tasks of a tenant
// than the tenant's ready count promised (SKIP LOCKED skipped rows another
// claim held), recounted the tenant's ready tasks and wrote that count back
// as an absolute value into tenant_queues. An admission of the same tenant
// that committed between the recount and that write lost its +1: the row
// said 0 ready while a task was ready, no claim read the tenant again, and
// its task waited for its deadline. This test failed within seconds then;
// the store now changes ready counts by deltas only, and it passes.
//
// Two claimers are enough to take that path (each skips the rows the other
// holds); with one node, a cancel or timeout holding a queued row, or a
// ready count that drifted up, takes it too. The test races admissions of
// one tenant with claims from two forks (two nodes), then, once everything
// is quiet, claims until a claim returns nothing: every queued task must
// have been claimed by then.
func TestReadyCountKeepsEveryQueuedTaskClaimable(t *testing.T) {
	if testing.Short() {
		t.Skip("races a store for about 20 s")
	}
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		url := pgtest.URL(t)
		s := pgtest.Open(t, url, pgtest.Schema(t, url))
		raceReadyCount(t, s, 30) // the old bug showed within 30 rounds in 6 runs of 7
	})
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "ready.db"), sqlite.Options{Synchronous: "normal"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		raceReadyCount(t, s, 5) // one writer: the race cannot happen; a check of the test itself
	})
}

func raceReadyCount(t *testing.T, s store.Store, rounds int) {
	const tenant = "t-ready"
	ctx := t.Context()
	now := time.Now()
	admitOne := func(st store.Store) (string, error) {
		id := uuid.Must(uuid.NewV7()).String()
		res, err := st.Admit(ctx, &store.AdmitParams{Now: now, Items: []*store.AdmitItem{{
			TaskID: id, Tenant: tenant, Author: "a", IdempotencyKey: "k-" + id, RequestHash: "h",
			Workflow: "w", Pool: dockettype.PoolOnline, MaxAttempts: 3, DeadlineAt: now.Add(time.Hour),
			TraceID: "0af7651916cd43dd8448eb211c80319c", ConfigVersion: "v", Input: []byte(`{}`),
		}}})
		if err != nil {
			return "", err
		}
		if res[0].Outcome != store.Admitted {
			return "", nil // capacity is unbounded: cannot happen
		}
		return id, nil
	}
	claimAndFinish := func(st store.Store, owner string) (int, error) {
		got, err := st.Claim(ctx, &store.ClaimParams{Now: now, Queue: store.PoolQueue(dockettype.PoolOnline), Owner: owner, Limit: 4, LeaseTTL: time.Hour})
		if err != nil {
			return 0, err
		}
		for _, c := range got {
			if _, err := st.Finish(ctx, &store.FinishParams{Now: now, Items: []store.FinishItem{{
				Lease: c.Lease(), Kind: store.FinishSucceed, Result: []byte(`{}`)}}}); err != nil {
				return 0, err
			}
		}
		return len(got), nil
	}
	fork := func(name string) store.Store {
		f, err := s.Fork(name, store.ForkOptions{MaxConns: 2})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	admitter, claimerA, claimerB := fork("admit"), fork("claim-a"), fork("claim-b")

	for round := range rounds {
		rctx, stop := context.WithTimeout(ctx, 500*time.Millisecond)
		var (
			wg       sync.WaitGroup
			mu       sync.Mutex
			errCount atomic.Int32
			firstErr error
		)
		fail := func(err error) {
			if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || rctx.Err() != nil {
				return
			}
			if errCount.Add(1) == 1 {
				mu.Lock()
				firstErr = err
				mu.Unlock()
			}
		}
		wg.Go(func() {
			for rctx.Err() == nil {
				_, err := admitOne(admitter)
				fail(err)
			}
		})
		for _, c := range []store.Store{claimerA, claimerB} {
			wg.Go(func() {
				for rctx.Err() == nil {
					_, err := claimAndFinish(c, "node")
					fail(err)
				}
			})
		}
		wg.Wait()
		stop()
		if firstErr != nil {
			t.Fatalf("round %d: %v", round, firstErr)
		}

		// Quiet now: claims take every queued task, one claim after another,
		// until one returns nothing.
		for {
			n, err := claimAndFinish(s, "drain")
			if err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				break
			}
		}
		queued, err := s.ListTasks(ctx, &store.ListTasksParams{Tenant: tenant, State: dockettype.StateQueued, Limit: 500})
		if err != nil {
			t.Fatal(err)
		}
		if len(queued) > 0 {
			ids := make([]string, len(queued))
			for i, q := range queued {
				ids[i] = q.ID
			}
			t.Fatalf("round %d: %d tasks are queued and ready, yet a claim returns none: the tenant's ready count lost them (%s)",
				round, len(queued), fmt.Sprint(ids))
		}
	}
}
