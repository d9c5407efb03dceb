package postgres_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/store/postgres"
)

// Several nodes (forks, each with its own pool) admit, claim, finish, cancel,
// recover and expire the same tasks at once. Afterwards the counters the
// store keeps (pool and tenant in-flight, per-tenant ready counts) equal what
// the task rows say, and every task drains to exactly one terminal state.
func TestNodesRaceOnSharedQueue(t *testing.T) {
	url := databaseURL(t)
	schema := freshSchema(t, url)
	s, err := postgres.Open(t.Context(), url, postgres.Options{Schema: schema})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer s.Close()

	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var tick atomic.Int64
	now := func() time.Time { return base.Add(time.Duration(tick.Add(1)) * time.Millisecond) }
	tenants := []string{"a", "b", "c"}
	pools := []dockettype.Pool{dockettype.PoolOnline, dockettype.PoolOffline}
	pick := func(r *rand.Rand, n int) int { return r.IntN(n) }

	var (
		mu  sync.Mutex
		ids []string
	)
	const nodes, rounds = 4, 40
	var wg sync.WaitGroup
	errs := make(chan error, nodes)
	for n := range nodes {
		f, err := s.Fork(fmt.Sprintf("node-%d", n), store.ForkOptions{MaxConns: 3})
		if err != nil {
			t.Fatalf("Fork: %v", err)
		}
		defer f.Close()
		wg.Go(func() {
			ctx := t.Context()
			r := rand.New(rand.NewPCG(uint64(n), 7))
			err := func() error {
				for range rounds {
					var items []*store.AdmitItem
					for range 1 + pick(r, 4) {
						id := uuid.Must(uuid.NewV7()).String()
						key := fmt.Sprintf("k%d", pick(r, 150)) // shared keys: replays and conflicts across nodes
						items = append(items, &store.AdmitItem{
							TaskID: id, Tenant: tenants[pick(r, len(tenants))], IdempotencyKey: key, RequestHash: key,
							Workflow: "demo.echo", Pool: pools[pick(r, 2)], Priority: pick(r, 3), MaxAttempts: 2,
							DeadlineAt: base.Add(time.Duration(200+pick(r, 400)) * time.Millisecond), PoolCapacity: 40,
						})
					}
					res, err := f.Admit(ctx, &store.AdmitParams{Now: now(), Items: items})
					if err != nil {
						return fmt.Errorf("admit: %w", err)
					}
					for _, a := range res {
						if a.Outcome == store.Admitted {
							mu.Lock()
							ids = append(ids, a.Task.ID)
							mu.Unlock()
						}
					}
					claimed, err := f.Claim(ctx, &store.ClaimParams{Now: now(), Queue: store.PoolQueue(pools[pick(r, 2)]), Owner: "n", Limit: 1 + pick(r, 5), LeaseTTL: 50 * time.Millisecond})
					if err != nil {
						return fmt.Errorf("claim: %w", err)
					}
					var fin []store.FinishItem
					for _, c := range claimed {
						switch pick(r, 4) {
						case 0:
							fin = append(fin, store.FinishItem{Lease: c.Lease(), Kind: store.FinishSucceed, Result: []byte(`1`)})
						case 1:
							fin = append(fin, store.FinishItem{Lease: c.Lease(), Kind: store.FinishRetry, Code: dockettype.CodeWorkflowError, RunAfter: now()})
						case 2:
							if _, err := f.Cancel(ctx, &store.CancelParams{Now: now(), Tenant: c.Task.Tenant, TaskID: c.Task.ID}); err != nil {
								return fmt.Errorf("cancel: %w", err)
							}
						} // 3: abandoned, left to recovery
					}
					if _, err := f.Finish(ctx, &store.FinishParams{Now: now(), Items: fin}); err != nil {
						return fmt.Errorf("finish: %w", err)
					}
					exp, err := f.FindExpiredLeases(ctx, &store.FindExpiredLeasesParams{Now: now(), Limit: 5})
					if err != nil {
						return fmt.Errorf("find expired: %w", err)
					}
					if _, err := f.RecoverLeases(ctx, &store.RecoverLeasesParams{Now: now(), Items: exp}); err != nil {
						return fmt.Errorf("recover: %w", err)
					}
					over, err := f.FindOverdue(ctx, &store.FindOverdueParams{Now: now(), Limit: 5})
					if err != nil {
						return fmt.Errorf("find overdue: %w", err)
					}
					if _, err := f.ExpireTasks(ctx, &store.ExpireTasksParams{Now: now(), Items: over}); err != nil {
						return fmt.Errorf("expire: %w", err)
					}
				}
				return nil
			}()
			if err != nil {
				errs <- fmt.Errorf("node %d: %w", n, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	if _, err := conn.Exec(t.Context(), "SET search_path = "+pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	checks := map[string]string{
		"pool in-flight counters vs live tasks": `SELECT count(*) FROM (SELECT key, sum(n) AS n FROM counters WHERE scope = 'pool' GROUP BY key) c
			WHERE c.n <> (SELECT count(*) FROM task_queue q WHERE split_part(q.queue, '/', 1) = c.key)`,
		"tenant in-flight counters vs live tasks": `SELECT count(*) FROM (SELECT key, sum(n) AS n FROM counters WHERE scope = 'tenant' GROUP BY key) c
			WHERE c.n <> (SELECT count(*) FROM task_queue q WHERE q.tenant = c.key)`,
		"ready counts vs ready tasks": `SELECT count(*) FROM (
			SELECT queue, tenant, count(*) AS n FROM task_queue WHERE state = 'queued' AND run_after IS NULL GROUP BY queue, tenant) r
			FULL JOIN (SELECT * FROM tenant_queues WHERE queued > 0) q USING (queue, tenant)
			WHERE coalesce(r.n, 0) <> coalesce(q.queued, 0)`,
		"every task live or finished, not both": `SELECT count(*) FROM tasks t WHERE
			(EXISTS (SELECT 1 FROM task_queue q WHERE q.id = t.id)) = (EXISTS (SELECT 1 FROM task_results r WHERE r.task_id = t.id))`,
		"terminal events per terminal task": `SELECT count(*) FROM tasks t WHERE
			(SELECT count(*) FROM task_events e WHERE e.task_id = t.id AND e.to_state IN ('succeeded', 'failed', 'cancelled', 'timed_out'))
			<> (SELECT count(*) FROM task_results r WHERE r.task_id = t.id)`,
	}
	for name, q := range checks {
		var bad int
		if err := conn.QueryRow(t.Context(), q).Scan(&bad); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if bad != 0 {
			t.Errorf("%s: %d mismatches", name, bad)
		}
	}
	var total int
	if err := conn.QueryRow(t.Context(), "SELECT count(*) FROM tasks").Scan(&total); err != nil {
		t.Fatal(err)
	}
	if total != len(ids) {
		t.Errorf("tasks = %d, want the %d admitted", total, len(ids))
	}
	t.Logf("%d tasks admitted", total)
}
