package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jonboulle/clockwork"
	"github.com/prometheus/client_golang/prometheus/testutil"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/logtest"
	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/store/postgres"
	"github.com/docket-dev/docket/internal/store/postgres/pgtest"
	"github.com/docket-dev/docket/internal/store/sqlite"
	"github.com/docket-dev/docket/internal/tracing/otlp"
)

// BenchmarkBurnDown admits N no-op tasks (batches of 1,000, pools stopped),
// then starts the service and times the drain until every task is
// terminal: claims, the workflow call, fenced finishes, events and counters
// all included. N is -benchtime's count (e.g. -benchtime 20000x). It runs
// on SQLite (durable default) and, when DOCKET_TEST_POSTGRES_URL is set, on
// PostgreSQL; each also "-traced": tracing on, set up from
// OTEL_EXPORTER_OTLP_ENDPOINT as a node does, exporting with OTLP/HTTP to
// a receiver in the test that decodes and discards (its spans/task metric
// is what arrived, flushed after the timer stops).
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
	for _, name := range []string{"sqlite", "sqlite-traced", "postgres", "postgres-traced"} {
		backend, traced := strings.CutSuffix(name, "-traced")
		open, ok := backends[backend]
		if !ok {
			continue
		}
		b.Run(name, func(b *testing.B) {
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
						TraceID: NewTraceID(), Input: []byte(`{}`),
					}
				}
				if _, err := st.Admit(ctx, &store.AdmitParams{Now: time.Now(), Items: items}); err != nil {
					b.Fatal(err)
				}
			}
			logger, _ := logtest.New(b)
			rt := newTestRuntime()
			rt.register("bench.noop", dockettype.PoolOnline, func(context.Context, *Invocation) (json.RawMessage, error) {
				return json.RawMessage(`{}`), nil
			})
			var tp *otlp.Provider
			var received *atomic.Int64
			if traced {
				tp, received = benchTracing(b)
				defer tp.Shutdown(context.Background())
			}
			cfg := Config{Clock: clockwork.NewRealClock(), Logger: logger, ShutdownGrace: time.Second,
				Online: PoolConfig{Capacity: -1, Workers: 2000}, Offline: PoolConfig{Workers: -1}, ClaimBatch: 1000, FinishBatch: 1000}
			if tp != nil {
				cfg.TracerProvider = tp.TracerProvider
			}
			svc, err := New(st, rt, cfg)
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
			if tp != nil {
				if err := tp.Shutdown(context.Background()); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(received.Load())/float64(n), "spans/task")
			}
		})
	}
}

// benchTracing starts an OTLP/HTTP receiver that decodes and discards what
// it is sent, and the provider a node would make with
// OTEL_EXPORTER_OTLP_ENDPOINT pointing at it. It counts the spans
// received.
func benchTracing(b *testing.B) (*otlp.Provider, *atomic.Int64) {
	received := new(atomic.Int64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, err := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		if err == nil {
			err = proto.Unmarshal(raw, &req)
		}
		if err != nil {
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		for _, rs := range req.GetResourceSpans() {
			for _, ss := range rs.GetScopeSpans() {
				received.Add(int64(len(ss.GetSpans())))
			}
		}
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	b.Cleanup(srv.Close)
	b.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	tp, err := otlp.FromEnv(context.Background(), "bench")
	if err != nil || !tp.Enabled() {
		b.Fatalf("tracing: %v (enabled %v)", err, tp.Enabled())
	}
	return tp, received
}
