package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jonboulle/clockwork"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/logtest"
	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/store/postgres"
	"github.com/docket-dev/docket/internal/store/postgres/pgtest"
)

// Flow control benchmarks on PostgreSQL (DOCKET_TEST_POSTGRES_URL), each
// with three nodes (three services on one schema, each with its own
// connections) draining no-op tasks; the starts are read back from the
// history.
//
//	go test -run XXX -bench 'Flow' -benchtime 1x ./internal/queue/

// flowNodes starts n services on one schema and returns them with the
// first store handle (for admissions and reads).
func flowNodes(b *testing.B, url, schema string, n int) (store.Store, []*Service) {
	var first store.Store
	var svcs []*Service
	for i := range n {
		st, err := postgres.Open(context.Background(), url, postgres.Options{Schema: schema, MaxConns: 16})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { st.Close() })
		if first == nil {
			first = st
		}
		logger, _ := logtest.New(b)
		rt := newTestRuntime()
		rt.register("bench.noop", dockettype.PoolOnline, func(context.Context, *Invocation) (json.RawMessage, error) {
			return json.RawMessage(`{}`), nil
		})
		svc, err := New(st, rt, Config{NodeID: fmt.Sprint("node-", i), Clock: clockwork.NewRealClock(), Logger: logger,
			ShutdownGrace: time.Second, SyncClock: true,
			Online: PoolConfig{Capacity: -1, Workers: 2000}, Offline: PoolConfig{Workers: -1}, ClaimBatch: 1000, FinishBatch: 1000})
		if err != nil {
			b.Fatal(err)
		}
		svcs = append(svcs, svc)
	}
	return first, svcs
}

// admitBench admits n no-op tasks, key(i) their concurrency key.
func admitBench(b *testing.B, st store.Store, n int, key func(i int) string) {
	for done := 0; done < n; done += 1000 {
		items := make([]*store.AdmitItem, min(1000, n-done))
		for i := range items {
			items[i] = &store.AdmitItem{
				TaskID: uuid.Must(uuid.NewV7()).String(), Tenant: "bench", Author: "bench",
				IdempotencyKey: fmt.Sprint(done + i), RequestHash: "h", Workflow: "bench.noop",
				Pool: dockettype.PoolOnline, MaxAttempts: 3, DeadlineAt: time.Now().Add(time.Hour),
				TraceID: "t", Input: []byte(`{}`), ConcurrencyKey: key(done + i),
			}
		}
		if _, err := st.Admit(context.Background(), &store.AdmitParams{Now: time.Now(), Items: items}); err != nil {
			b.Fatal(err)
		}
	}
}

// flowEvent is one start or end read back from the history.
type flowEvent struct {
	id      int64
	task    string
	key     string
	start   bool
	at      time.Time
	running bool
}

func readFlowEvents(b *testing.B, url, schema string) []flowEvent {
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(context.Background(), `SELECT e.id, e.task_id, coalesce(t.concurrency_key, ''), e.to_state = 'running', e.at
		FROM `+pgx.Identifier{schema}.Sanitize()+`.task_events e JOIN `+pgx.Identifier{schema}.Sanitize()+`.tasks t ON t.id = e.task_id
		WHERE e.to_state = 'running' OR e.from_state = 'running' ORDER BY e.id`)
	if err != nil {
		b.Fatal(err)
	}
	var out []flowEvent
	var e flowEvent
	if _, err := pgx.ForEachRow(rows, []any{&e.id, &e.task, &e.key, &e.start, &e.at}, func() error {
		out = append(out, e)
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	return out
}

func runNodes(b *testing.B, svcs []*Service, until func() bool) time.Duration {
	checkpoint(b)
	start := time.Now()
	for _, s := range svcs {
		if err := s.Start(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !until() {
		<-tick.C
	}
	d := time.Since(start)
	for _, s := range svcs {
		s.Stop()
	}
	return d
}

// checkpoint runs a CHECKPOINT before a timed drain, so that every run
// starts from the same WAL state: a checkpoint that the WAL of the runs
// before forced during a drain would weigh on that run alone (its writes,
// and the full-page images of every page first changed after it).
func checkpoint(b *testing.B) {
	conn, err := pgx.Connect(context.Background(), pgtest.URL(b))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), "CHECKPOINT"); err != nil {
		b.Fatal(err)
	}
}

func succeeded(svcs []*Service) float64 {
	n := 0.0
	for _, s := range svcs {
		n += testutil.ToFloat64(s.metrics.TerminalOutcomes.WithLabelValues(string(dockettype.PoolOnline), string(dockettype.StateSucceeded)))
	}
	return n
}

// BenchmarkFlowRateLimit: a 500/s (burst 50) rate limit on the workflow,
// three nodes, 70 s of backlog, run for 60 s: the start rate over the
// minute, and the most starts in any one-second window.
func BenchmarkFlowRateLimit(b *testing.B) {
	url := pgtest.URL(b)
	const rate, burst = 500, 50
	for range b.N {
		schema := pgtest.Schema(b, url)
		st, svcs := flowNodes(b, url, schema, 3)
		admitBench(b, st, 35_000, func(int) string { return "" })
		r, bu := rate, burst
		if _, err := st.UpdateFlowRule(context.Background(), &store.UpdateFlowRuleParams{Now: time.Now(),
			Target: store.FlowTarget{Scope: store.ScopeWorkflow, Key: "bench.noop"}, RatePerSecond: &r, Burst: &bu}); err != nil {
			b.Fatal(err)
		}
		deadline := time.Now().Add(62 * time.Second)
		runNodes(b, svcs, func() bool { return time.Now().After(deadline) })
		var starts []time.Time
		for _, e := range readFlowEvents(b, url, schema) {
			if e.start {
				starts = append(starts, e.at)
			}
		}
		slices.SortFunc(starts, func(a, b time.Time) int { return a.Compare(b) })
		// The minute from the first start + 1 s (the pools' start-up).
		from := starts[0].Add(time.Second)
		n := 0
		for _, s := range starts {
			if !s.Before(from) && s.Before(from.Add(time.Minute)) {
				n++
			}
		}
		most, j := 0, 0
		for i := range starts {
			for !starts[j].Add(time.Second).After(starts[i]) {
				j++
			}
			most = max(most, i-j+1)
		}
		b.ReportMetric(float64(n)/60, "starts/s")
		b.ReportMetric(float64(most), "max-starts-in-1s")
		b.ReportMetric(float64(rate+burst), "rate+burst")
	}
}

// BenchmarkFlowConcurrencyKeys: 20,000 tasks over 1,000 keys (BENCH_KEYS)
// with a concurrency of 1 per key, against the same 20,000 tasks without
// keys, three nodes each; the most tasks of one key running at once, from
// the history. keys=true,paused-elsewhere is the keyed run with another
// tenant paused: a rule that does not apply to the drained tasks.
func BenchmarkFlowConcurrencyKeys(b *testing.B) {
	url := pgtest.URL(b)
	const tasks = 20_000
	keys := 1000
	if v, err := strconv.Atoi(os.Getenv("BENCH_KEYS")); err == nil {
		keys = v
	}
	for _, run := range []struct {
		name          string
		keyed, paused bool
	}{{"keys=false", false, false}, {"keys=true", true, false}, {"keys=true,paused-elsewhere", true, true}} {
		keyed := run.keyed
		b.Run(run.name, func(b *testing.B) {
			for range b.N {
				schema := pgtest.Schema(b, url)
				st, svcs := flowNodes(b, url, schema, 3)
				if run.paused {
					if _, err := st.SetPaused(context.Background(), &store.SetPausedParams{Now: time.Now(),
						Target: store.FlowTarget{Scope: store.ScopeTenant, Key: "someone-else"}, Paused: true}); err != nil {
						b.Fatal(err)
					}
				}
				admitBench(b, st, tasks, func(i int) string {
					if !keyed {
						return ""
					}
					return fmt.Sprint("k", i%keys)
				})
				cpu0 := cpuSeconds()
				d := runNodes(b, svcs, func() bool { return succeeded(svcs) >= tasks })
				b.ReportMetric(tasks/d.Seconds(), "tasks/s")
				// The three nodes' CPU per task (see cpuSeconds).
				b.ReportMetric((cpuSeconds()-cpu0)/tasks*1e6, "node-cpu-us/task")
				running := map[string]int{}
				isRunning := map[string]bool{}
				most := 0
				for _, e := range readFlowEvents(b, url, schema) {
					switch {
					case e.start:
						isRunning[e.task] = true
						running[e.key]++
						if e.key != "" {
							most = max(most, running[e.key])
						}
					case isRunning[e.task]:
						isRunning[e.task] = false
						running[e.key]--
					}
				}
				b.ReportMetric(float64(most), "max-running-per-key")
				handedOff := 0.0
				for _, s := range svcs {
					handedOff += testutil.ToFloat64(s.metrics.HandOffs.WithLabelValues(string(dockettype.PoolOnline)))
				}
				// The share of starts that a finish's hand-off made (the
				// rest went through the claims).
				b.ReportMetric(handedOff/tasks, "handed-off/task")
				if keyed {
					run, gap := keyTimeline(readFlowEvents(b, url, schema))
					b.ReportMetric(run, "ms-start-to-end-p50")
					b.ReportMetric(gap, "ms-end-to-next-start-p50")
				}
			}
		})
	}
}

// keyTimeline splits a keyed drain's time: the median from a task's start
// to its end (the run and the finish's write), and from a task's end to
// the next start of its key (the release, the wake-up and the claim).
func keyTimeline(events []flowEvent) (run, gap float64) {
	started := map[string]time.Time{}
	lastEnd := map[string]time.Time{}
	var runs, gaps []float64
	for _, e := range events {
		if e.start {
			started[e.task] = e.at
			if end, ok := lastEnd[e.key]; ok {
				gaps = append(gaps, float64(e.at.Sub(end).Microseconds())/1000)
			}
			continue
		}
		if s, ok := started[e.task]; ok {
			runs = append(runs, float64(e.at.Sub(s).Microseconds())/1000)
			delete(started, e.task)
			lastEnd[e.key] = e.at
		}
	}
	return median(runs), median(gaps)
}

// BenchmarkFlowLimitsNotBinding: the same burn-down of 20,000 no-op tasks
// on three nodes, without rules and with limits that do not bind (a
// 1,000,000/s rate limit on the drained workflow and a pause of another
// tenant, so that every claim takes the flow-controlled path), in
// rounds (BENCH_ROUNDS, default 3) whose first run alternates; the medians and the median
// of the rounds' ratios.
func BenchmarkFlowLimitsNotBinding(b *testing.B) {
	url := pgtest.URL(b)
	const tasks = 20_000
	rounds := benchRounds(3)
	for range b.N {
		var off, on, ratio []float64
		for r := range rounds {
			// Which runs first alternates: the second run of a round meets
			// the first one's dead rows, WAL and checkpoint.
			order := []int{0, 1}
			if r%2 == 1 {
				order = []int{1, 0}
			}
			var pair [2]float64
			for _, i := range order {
				limited := i == 1
				schema := pgtest.Schema(b, url)
				st, svcs := flowNodes(b, url, schema, 3)
				admitBench(b, st, tasks, func(int) string { return "" })
				if limited {
					rate, burst := 1_000_000, 1000
					if _, err := st.UpdateFlowRule(context.Background(), &store.UpdateFlowRuleParams{Now: time.Now(),
						Target: store.FlowTarget{Scope: store.ScopeWorkflow, Key: "bench.noop"}, RatePerSecond: &rate, Burst: &burst}); err != nil {
						b.Fatal(err)
					}
					if _, err := st.SetPaused(context.Background(), &store.SetPausedParams{Now: time.Now(),
						Target: store.FlowTarget{Scope: store.ScopeTenant, Key: "someone-else"}, Paused: true}); err != nil {
						b.Fatal(err)
					}
				}
				d := runNodes(b, svcs, func() bool { return succeeded(svcs) >= tasks })
				pair[i] = tasks / d.Seconds()
			}
			off, on, ratio = append(off, pair[0]), append(on, pair[1]), append(ratio, pair[1]/pair[0])
			b.Logf("round %d: none %.0f tasks/s, unbound %.0f tasks/s (%.3f)", r+1, pair[0], pair[1], pair[1]/pair[0])
		}
		b.ReportMetric(median(off), "none-tasks/s")
		b.ReportMetric(median(on), "unbound-tasks/s")
		b.ReportMetric(median(ratio), "unbound/none")
	}
}
