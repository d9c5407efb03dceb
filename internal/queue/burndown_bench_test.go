package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
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

// BenchmarkBurnDown admits N no-op tasks (batches of 1,000, pools stopped),
// then starts the service and times the drain until every task is
// terminal: claims, the workflow call, fenced finishes, events and counters
// all included. N is -benchtime's count (e.g. -benchtime 20000x). It runs
// on SQLite (durable default) and, when DOCKET_TEST_POSTGRES_URL is set, on
// PostgreSQL. Each runs twice: limits=none with no flow rule, and
// limits=unbound with flow rules that bind nothing (a rate limit on the
// workflow far above the drain's rate, a pause of another tenant), so the
// claims take the flow-controlled path.
func BenchmarkBurnDown(b *testing.B) {
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
		for _, limits := range []string{"none", "unbound"} {
			b.Run(name+"/limits="+limits, func(b *testing.B) { burnDown(b, open, limits == "unbound") })
		}
	}
}

// burnDown is one run of BenchmarkBurnDown.
func burnDown(b *testing.B, open func(b *testing.B) store.Store, limited bool) {
	st := open(b)
	defer st.Close()
	ctx := context.Background()
	n := b.N
	for done := 0; done < n; done += 1000 {
		items := make([]*store.AdmitItem, min(1000, n-done))
		for i := range items {
			items[i] = &store.AdmitItem{
				TaskID: uuid.Must(uuid.NewV7()).String(), Tenant: "bench", Author: "bench",
				IdempotencyKey: fmt.Sprint(done + i), RequestHash: "h", Workflow: "bench.noop",
				Pool: dockettype.PoolOnline, MaxAttempts: 3, DeadlineAt: time.Now().Add(time.Hour),
				TraceID: "t", Input: []byte(`{}`),
			}
		}
		if _, err := st.Admit(ctx, &store.AdmitParams{Now: time.Now(), Items: items}); err != nil {
			b.Fatal(err)
		}
	}
	if limited {
		rate := store.MaxRate
		if _, err := st.UpdateFlowRule(ctx, &store.UpdateFlowRuleParams{Now: time.Now(),
			Target: store.FlowTarget{Scope: store.ScopeWorkflow, Key: "bench.noop"}, RatePerSecond: &rate}); err != nil {
			b.Fatal(err)
		}
		if _, err := st.SetPaused(ctx, &store.SetPausedParams{Now: time.Now(),
			Target: store.FlowTarget{Scope: store.ScopeTenant, Key: "nobody"}, Paused: true}); err != nil {
			b.Fatal(err)
		}
	}
	logger, _ := logtest.New(b)
	rt := newTestRuntime()
	rt.register("bench.noop", dockettype.PoolOnline, func(context.Context, *Invocation) (json.RawMessage, error) {
		return json.RawMessage(`{}`), nil
	})
	svc, err := New(st, rt, Config{Clock: clockwork.NewRealClock(), Logger: logger, ShutdownGrace: time.Second,
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
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for testutil.ToFloat64(done) < float64(n) {
		<-tick.C
	}
	b.StopTimer()
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "tasks/s")
}
