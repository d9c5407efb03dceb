package faultcheck

import (
	"testing"
	"time"

	"github.com/docket-dev/docket/dockettype"
)

// The flow pass flags a one-second window with more starts than rate +
// burst and a key with more tasks running than its limit, from the
// histories in event order; starts spread over two seconds, or a key's
// task that ended before the next started, are no anomaly.
func TestCheckFlow(t *testing.T) {
	t0 := time.Date(2026, 10, 12, 9, 0, 0, 0, time.UTC)
	id := int64(0)
	ev := func(task string, from, to dockettype.State, at time.Duration) dockettype.Event {
		id++
		return dockettype.Event{ID: id, TaskID: task, From: from, To: to, At: t0.Add(at)}
	}
	const q, run, ok = dockettype.StateQueued, dockettype.StateRunning, dockettype.StateSucceeded
	// task runs from start for d.
	task := func(name, key string, start, d time.Duration) FlowTask {
		return FlowTask{ID: name, Key: key, State: ok, Events: []dockettype.Event{
			ev(name, "", q, 0), ev(name, q, run, start), ev(name, run, ok, start+d)}}
	}
	for _, tc := range []struct {
		name  string
		tasks []FlowTask
		want  int
	}{
		{name: "within both limits", tasks: []FlowTask{
			task("a", "k1", 0, 100*time.Millisecond), task("b", "k1", 200*time.Millisecond, 100*time.Millisecond),
			task("c", "k2", 1050*time.Millisecond, time.Second), task("d", "k3", 2100*time.Millisecond, 0)}},
		{name: "three starts in one second over a limit of 2 + 0", tasks: []FlowTask{
			task("a", "k1", 0, 0), task("b", "k2", 500*time.Millisecond, 0), task("c", "k3", 999*time.Millisecond, 0)}, want: 1},
		{name: "a key's tasks one after the other", tasks: []FlowTask{
			task("a", "k1", 0, 300*time.Millisecond), task("b", "k1", 2*time.Second, 0),
			task("c", "k1", 2100*time.Millisecond, 0)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := &FlowView{RatePerSecond: 2, ConcurrencyPerKey: 1, Submitted: len(tc.tasks), Tasks: tc.tasks}
			r := Check(&CheckInput{Flow: v})
			if got := r.Anomalies[AnomalyFlowLimit]; got != tc.want {
				t.Errorf("flow anomalies = %d, want %d (%v)", got, tc.want, r.Examples)
			}
		})
	}
	// Overlapping tasks of one key, events interleaved in commit order.
	id = 0
	a := FlowTask{ID: "a", Key: "k", State: ok}
	b := FlowTask{ID: "b", Key: "k", State: ok}
	a.Events = append(a.Events, ev("a", q, run, 0))
	b.Events = append(b.Events, ev("b", q, run, 10*time.Millisecond))
	a.Events = append(a.Events, ev("a", run, ok, 20*time.Millisecond))
	b.Events = append(b.Events, ev("b", run, ok, 30*time.Millisecond))
	r := Check(&CheckInput{Flow: &FlowView{RatePerSecond: 10, ConcurrencyPerKey: 1, Submitted: 2, Tasks: []FlowTask{a, b}}})
	if got := r.Anomalies[AnomalyFlowLimit]; got != 1 || r.FlowPeakPerKey != 2 {
		t.Errorf("two of one key running at once: anomalies %d, peak %d; want 1 and 2", got, r.FlowPeakPerKey)
	}
}
