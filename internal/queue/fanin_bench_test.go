package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jonboulle/clockwork"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/logtest"
	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/store/postgres"
	"github.com/docket-dev/docket/internal/store/postgres/pgtest"
	"github.com/docket-dev/docket/internal/store/sqlite"
)

// commitClock is a store that records when each Finish of any of deps
// returned, just after its transaction committed; its forks record into
// the same clock.
type commitClock struct {
	store.Store
	deps map[string]bool
	mu   *sync.Mutex
	last *time.Time // the latest return of a Finish that held a dependency
}

func (c *commitClock) Finish(ctx context.Context, p *store.FinishParams) ([]store.FinishResult, error) {
	res, err := c.Store.Finish(ctx, p)
	now := time.Now()
	for _, it := range p.Items {
		if c.deps[it.TaskID] {
			c.mu.Lock()
			if now.After(*c.last) {
				*c.last = now
			}
			c.mu.Unlock()
			break
		}
	}
	return res, err
}

func (c *commitClock) Fork(name string, opts store.ForkOptions) (store.Store, error) {
	f, err := c.Store.Fork(name, opts)
	if err != nil {
		return nil, err
	}
	return &commitClock{Store: f, deps: c.deps, mu: c.mu, last: c.last}, nil
}

func (c *commitClock) Listen(ctx context.Context, fn func(store.Notification)) error {
	return c.Store.(store.Listener).Listen(ctx, fn)
}

// BenchmarkFanIn admits N no-op tasks (-benchtime's count, e.g. 10000x)
// and, in the "fanin" variant, one more task that depends on all of them;
// then it starts the service and times the drain until every task is
// terminal, as BenchmarkBurnDown does. "plain" is the same N tasks without
// the join. It reports tasks/s (the N tasks over the drain) and, for
// fanin, fanin_ms: from the return of the Finish call that committed the
// last dependency's success to the join's workflow call. SQLite, and
// PostgreSQL when DOCKET_TEST_POSTGRES_URL is set.
func BenchmarkFanIn(b *testing.B) {
	backends := map[string]func(b *testing.B) store.Store{
		"sqlite": func(b *testing.B) store.Store {
			st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "d.db"), sqlite.Options{Synchronous: os.Getenv("BENCH_SQLITE_SYNC")})
			if err != nil {
				b.Fatal(err)
			}
			return st
		},
	}
	if url := os.Getenv(pgtest.URLEnv); url != "" {
		backends["postgres"] = func(b *testing.B) store.Store {
			st, err := postgres.Open(context.Background(), url, postgres.Options{Schema: pgtest.Schema(b, url), MaxConns: 16})
			if err != nil {
				b.Fatal(err)
			}
			return st
		}
	}
	for _, name := range []string{"sqlite", "postgres"} {
		open, ok := backends[name]
		if !ok {
			continue
		}
		for _, join := range []bool{false, true} {
			variant := "plain"
			if join {
				variant = "fanin"
			}
			b.Run(name+"/"+variant, func(b *testing.B) { benchFanIn(b, open(b), join) })
		}
	}
}

func benchFanIn(b *testing.B, st store.Store, withJoin bool) {
	defer st.Close()
	ctx := context.Background()
	n := b.N
	item := func(key string) *store.AdmitItem {
		return &store.AdmitItem{
			TaskID: uuid.Must(uuid.NewV7()).String(), Tenant: "bench", Author: "bench",
			IdempotencyKey: key, RequestHash: "h", Workflow: "bench.noop",
			Pool: dockettype.PoolOnline, MaxAttempts: 3, DeadlineAt: time.Now().Add(time.Hour),
			TraceID: "t", Input: []byte(`{}`),
		}
	}
	ids := make([]string, 0, n)
	for done := 0; done < n; done += 1000 {
		items := make([]*store.AdmitItem, min(1000, n-done))
		for i := range items {
			items[i] = item(fmt.Sprint(done + i))
			ids = append(ids, items[i].TaskID)
		}
		if _, err := st.Admit(ctx, &store.AdmitParams{Now: time.Now(), Items: items}); err != nil {
			b.Fatal(err)
		}
	}
	var joinID string
	total := n
	if withJoin {
		j := item("join")
		j.DependsOn = ids
		res, err := st.Admit(ctx, &store.AdmitParams{Now: time.Now(), Items: []*store.AdmitItem{j}})
		if err != nil || res[0].Outcome != store.Admitted || res[0].Task.WaitingOn != dockettype.WaitingOnDependencies {
			b.Fatalf("admit the join: %v %+v", err, res)
		}
		joinID, total = j.TaskID, n+1
	}
	logger, _ := logtest.New(b)
	rt := newTestRuntime()
	var joinStart time.Time
	var mu sync.Mutex
	rt.register("bench.noop", dockettype.PoolOnline, func(_ context.Context, inv *Invocation) (json.RawMessage, error) {
		if inv.Task.ID == joinID {
			mu.Lock()
			joinStart = time.Now()
			mu.Unlock()
		}
		return json.RawMessage(`{}`), nil
	})
	deps := make(map[string]bool, len(ids))
	for _, id := range ids {
		deps[id] = true
	}
	var lastCommit time.Time
	clocked := &commitClock{Store: st, deps: deps, mu: &mu, last: &lastCommit}
	svc, err := New(clocked, rt, Config{Clock: clockwork.NewRealClock(), Logger: logger, ShutdownGrace: time.Second,
		Online: PoolConfig{Capacity: -1, Workers: 2000}, Offline: PoolConfig{Workers: -1}, ClaimBatch: 1000, FinishBatch: 1000})
	if err != nil {
		b.Fatal(err)
	}
	done := svc.metrics.TerminalOutcomes.WithLabelValues(string(dockettype.PoolOnline), string(dockettype.StateSucceeded))
	b.ResetTimer()
	if err := svc.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer svc.Stop()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for testutil.ToFloat64(done) < float64(total) {
		<-tick.C
	}
	b.StopTimer()
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "tasks/s")
	if !withJoin {
		return
	}
	j, err := st.GetTask(ctx, &store.GetTaskParams{Tenant: "bench", TaskID: joinID})
	if err != nil || j.StartedAt == nil {
		b.Fatalf("join: %v %+v", err, j)
	}
	for _, id := range ids {
		t, err := st.GetTask(ctx, &store.GetTaskParams{Tenant: "bench", TaskID: id})
		if err != nil || t.FinishedAt == nil {
			b.Fatalf("dependency %s: %v", id, err)
		}
		if t.FinishedAt.After(*j.StartedAt) {
			b.Fatalf("the join started at %s, before dependency %s finished at %s", j.StartedAt, id, t.FinishedAt)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	b.ReportMetric(float64(joinStart.Sub(lastCommit).Microseconds())/1000, "fanin_ms")
}
