package queue

import (
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/docket-dev/docket/internal/logtest"
	"github.com/docket-dev/docket/internal/store/postgres/pgtest"
)

// Three nodes (each its own Service and connections) on one PostgreSQL
// database fire a schedule every second: all three tick at the same
// instants and race for every fire time, and each time makes exactly one
// task, admitted by exactly one node, with no double advance.
func TestScheduleThreeNodesOnPostgres(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	schema := pgtest.Schema(t, url)
	clock := clockwork.NewFakeClockAt(baseTime)
	rt := newTestRuntime()
	var nodes []*harness
	var ticked []chan struct{}
	for _, name := range []string{"node-a", "node-b", "node-c"} {
		logger, _ := logtest.New(t)
		svc := newTestService(t, pgtest.Open(t, url, schema), rt, Config{
			NodeID: name, Clock: clock, Logger: logger, PollInterval: time.Hour,
			Online: PoolConfig{Workers: 2}, Offline: PoolConfig{Workers: -1},
			ShutdownGrace: time.Millisecond, ScheduleInterval: time.Second, noJitter: true,
		})
		h := &harness{t: t, svc: svc, clock: clock}
		ticked = append(ticked, h.watchScheduleTicks())
		nodes = append(nodes, h)
	}
	for i, h := range nodes {
		h.start()
		await(t, "schedule tick", ticked[i])
	}
	nodes[0].putSchedule(everySecond("fleet"))
	var want []time.Time
	for i := 1; i <= 20; i++ {
		clock.Advance(time.Second)
		for _, ch := range ticked {
			await(t, "schedule tick", ch)
		}
		want = append(want, baseTime.Add(time.Duration(i)*time.Second))
	}
	wantFiredOnce(t, nodes[1].svc, "acme", "fleet", want)
	var admitted float64
	for _, h := range nodes {
		admitted += testutil.ToFloat64(h.svc.metrics.ScheduleFires.WithLabelValues("admitted"))
	}
	if admitted != 20 {
		t.Errorf("the nodes admitted %v fires together, want 20", admitted)
	}
	if got := nodes[2].getSchedule("fleet"); got.Fired != 20 || len(got.Runs) != 20 {
		t.Errorf("fired %d with %d runs, want 20 (no double advance)", got.Fired, len(got.Runs))
	}
}
