package queue

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jonboulle/clockwork"
	"github.com/prometheus/client_golang/prometheus/testutil"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/defaults"
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
	backends := burnDownBackends()
	for _, name := range []string{"sqlite", "sqlite-traced", "postgres", "postgres-traced"} {
		backend, traced := strings.CutSuffix(name, "-traced")
		open, ok := backends[backend]
		if !ok {
			continue
		}
		b.Run(name, func(b *testing.B) {
			r := burnDown(b, open, b.N, traced, true)
			b.ReportMetric(r.tasksPerSec, "tasks/s")
			if traced {
				b.ReportMetric(r.spansPerTask, "spans/task")
			}
		})
	}
}

// BenchmarkBurnDownTracing compares tracing off and on in pairs of
// burn-downs, off then on, BENCH_ROUNDS rounds (default 5) of N tasks each
// (-benchtime Nx), so that a machine whose load drifts weighs on both
// alike. It reports the medians of each and of the rounds' on/off ratios.
func BenchmarkBurnDownTracing(b *testing.B) {
	rounds := benchRounds(5)
	backends := burnDownBackends()
	for _, name := range []string{"sqlite", "postgres"} {
		open, ok := backends[name]
		if !ok {
			continue
		}
		b.Run(name, func(b *testing.B) {
			if b.N == 1 {
				return // the framework's first probe: no figure of one task
			}
			var off, on, ratio, spans []float64
			for range rounds {
				o := burnDown(b, open, b.N, false, false)
				t := burnDown(b, open, b.N, true, false)
				off, on = append(off, o.tasksPerSec), append(on, t.tasksPerSec)
				ratio, spans = append(ratio, t.tasksPerSec/o.tasksPerSec), append(spans, t.spansPerTask)
				b.Logf("round %d: off %.0f tasks/s, on %.0f tasks/s (%.3f), %.3f spans/task exported; node CPU off %.1f µs/task, on %.1f; "+
					"allocated off %.0f B/task, on %.0f; collections off %d, on %d",
					len(off), o.tasksPerSec, t.tasksPerSec, t.tasksPerSec/o.tasksPerSec, t.spansPerTask, o.nodeCPU, t.nodeCPU,
					o.allocated, t.allocated, o.collections, t.collections)
			}
			b.ReportMetric(median(off), "off-tasks/s")
			b.ReportMetric(median(on), "on-tasks/s")
			b.ReportMetric(median(ratio), "on/off")
			b.ReportMetric(median(spans), "spans/task")
		})
	}
}

// benchRounds is BENCH_ROUNDS, or def.
func benchRounds(def int) int {
	if v, err := strconv.Atoi(os.Getenv("BENCH_ROUNDS")); err == nil && v > 0 {
		return v
	}
	return def
}

func median(v []float64) float64 {
	v = slices.Clone(v)
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

type openStore func(b *testing.B) store.Store

func burnDownBackends() map[string]openStore {
	backends := map[string]openStore{
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
	return backends
}

type burnDownResult struct {
	tasksPerSec  float64
	spansPerTask float64 // exported, when traced
	nodeCPU      float64 // this process's CPU per task over the drain, µs (see cpuSeconds)
	allocated    float64 // bytes allocated per task over the drain
	collections  uint32  // garbage collections over the drain
}

// burnDown admits n tasks on a fresh store, then times their drain. With
// timer it drives b's timer (one burn-down per benchmark run); without,
// it times the drain itself.
//
// BENCH_TRACE_SAMPLED (a fraction, default 1) is the share of tasks whose
// trace is sampled, as a parent-based sampler with that ratio would have
// decided at admission: the others' spans are not recorded.
func burnDown(b *testing.B, open openStore, n int, traced, timer bool) burnDownResult {
	// The collector runs as `docket serve` runs it.
	b.Cleanup(defaults.TuneGC(defaults.MaxBodyMemory, os.Getenv))
	st := open(b)
	defer st.Close()
	ctx := context.Background()
	sampled := 1.0
	if v, err := strconv.ParseFloat(os.Getenv("BENCH_TRACE_SAMPLED"), 64); err == nil {
		sampled = v
	}
	for done := 0; done < n; done += 1000 {
		items := make([]*store.AdmitItem, min(1000, n-done))
		for i := range items {
			items[i] = &store.AdmitItem{
				TaskID: uuid.Must(uuid.NewV7()).String(), Tenant: "bench", Author: "bench",
				IdempotencyKey: fmt.Sprint(done + i), RequestHash: "h", Workflow: "bench.noop",
				Pool: dockettype.PoolOnline, MaxAttempts: 3, DeadlineAt: time.Now().Add(time.Hour),
				TraceID: NewTraceID(), Input: []byte(`{}`),
				// Every 1/sampled-th task is sampled, spread evenly.
				TraceUnsampled: sampled < 1 && float64(done+i)*sampled-math.Floor(float64(done+i)*sampled) >= sampled,
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
	cfg := Config{Clock: clockwork.NewRealClock(), Logger: logger, ShutdownGrace: time.Second,
		Online: PoolConfig{Capacity: -1, Workers: 2000}, Offline: PoolConfig{Workers: -1}, ClaimBatch: 1000, FinishBatch: 1000}
	var (
		tp    *otlp.Provider
		count func() int
	)
	if traced {
		tp, count = benchTracing(b)
		defer tp.Shutdown(context.Background())
		cfg.TracerProvider = tp
	}
	svc, err := New(st, rt, cfg)
	if err != nil {
		b.Fatal(err)
	}
	done := svc.metrics.TerminalOutcomes.WithLabelValues(string(dockettype.PoolOnline), string(dockettype.StateSucceeded))
	if timer {
		b.ResetTimer()
	}
	start := time.Now()
	cpu0 := cpuSeconds()
	var mem0, mem1 runtime.MemStats
	runtime.ReadMemStats(&mem0)
	if err := svc.Start(ctx); err != nil {
		b.Fatal(err)
	}
	tick := time.NewTicker(5 * time.Millisecond)
	for testutil.ToFloat64(done) < float64(n) {
		<-tick.C
	}
	tick.Stop()
	elapsed := time.Since(start)
	cpu1 := cpuSeconds()
	runtime.ReadMemStats(&mem1)
	if timer {
		b.StopTimer()
		elapsed = b.Elapsed()
	}
	svc.Stop()
	r := burnDownResult{tasksPerSec: float64(n) / elapsed.Seconds(),
		nodeCPU:   (cpu1 - cpu0) / float64(n) * 1e6,
		allocated: float64(mem1.TotalAlloc-mem0.TotalAlloc) / float64(n), collections: mem1.NumGC - mem0.NumGC}
	if tp != nil {
		if err := tp.Shutdown(context.Background()); err != nil {
			b.Fatal(err)
		}
		r.spansPerTask = float64(count()) / float64(n)
	}
	return r
}

// benchTracing starts an OTLP/HTTP receiver, and the provider a node
// would make with OTEL_EXPORTER_OTLP_ENDPOINT pointing at it. The receiver
// stands for a collector, which runs in a process of its own: it reads
// each export into a buffer it reuses and counts its spans as it walks the
// message, keeping nothing, so that the node's process pays as little as
// can be for work that is not the node's. count returns the spans received.
func benchTracing(b *testing.B) (tp *otlp.Provider, count func() int) {
	var (
		mu    sync.Mutex
		spans int
		buf   []byte
		bad   error
	)
	empty, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		bb := bytes.NewBuffer(buf[:0])
		if _, err := bb.ReadFrom(r.Body); err != nil {
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		buf = bb.Bytes()
		n, err := countExportSpans(buf)
		if err != nil {
			bad = err
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		spans += n
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(empty)
	}))
	b.Cleanup(srv.Close)
	b.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	tp, err := otlp.FromEnv(context.Background(), "bench")
	if err != nil || !tp.Enabled() {
		b.Fatalf("tracing: %v (enabled %v)", err, tp.Enabled())
	}
	count = func() int {
		mu.Lock()
		defer mu.Unlock()
		if bad != nil {
			b.Fatalf("the receiver got a body that is no export: %v", bad)
		}
		return spans
	}
	return tp, count
}

// countExportSpans counts the spans of an ExportTraceServiceRequest
// (resource_spans = 1, their scope_spans = 2, their spans = 2) without
// decoding them.
func countExportSpans(raw []byte) (int, error) {
	n := 0
	err := eachField(raw, 1, func(rs []byte) error {
		return eachField(rs, 2, func(ss []byte) error {
			return eachField(ss, 2, func([]byte) error { n++; return nil })
		})
	})
	return n, err
}

// eachField calls f with each length-delimited field num of msg.
func eachField(msg []byte, num protowire.Number, f func([]byte) error) error {
	for len(msg) > 0 {
		got, typ, n := protowire.ConsumeTag(msg)
		if n < 0 {
			return protowire.ParseError(n)
		}
		msg = msg[n:]
		if got == num && typ == protowire.BytesType {
			v, n := protowire.ConsumeBytes(msg)
			if n < 0 {
				return protowire.ParseError(n)
			}
			if err := f(v); err != nil {
				return err
			}
			msg = msg[n:]
			continue
		}
		n = protowire.ConsumeFieldValue(got, typ, msg)
		if n < 0 {
			return protowire.ParseError(n)
		}
		msg = msg[n:]
	}
	return nil
}
