package faultcheck

import (
	"testing"

	"github.com/docket-dev/docket/dockettype"
)

// The dependencies pass flags a dependent that started before a dependency
// succeeded (or ran after one failed), and one left waiting, or ended
// otherwise than dependency_failed, once its dependencies are terminal; a
// dependent that runs anyway may start once all have ended.
func TestCheckDependencies(t *testing.T) {
	const (
		q  = dockettype.StateQueued
		rn = dockettype.StateRunning
		ok = dockettype.StateSucceeded
		fl = dockettype.StateFailed
	)
	// ev makes a history from (to state, event ID) pairs.
	ev := func(pairs ...any) []dockettype.Event {
		var out []dockettype.Event
		for i := 0; i < len(pairs); i += 2 {
			out = append(out, dockettype.Event{To: pairs[i].(dockettype.State), ID: int64(pairs[i+1].(int))})
		}
		return out
	}
	task := func(id string, state dockettype.State, code dockettype.Code, deps []string, events []dockettype.Event) *DependencyTask {
		t := &DependencyTask{Task: &dockettype.Task{ID: id, State: state, DependsOn: deps}, Events: events}
		if code != "" {
			t.Task.Error = &dockettype.TaskError{Code: code}
		}
		return t
	}
	dep := task("a", ok, "", nil, ev(q, 1, rn, 2, ok, 5))
	failed := task("f", fl, "boom", nil, ev(q, 1, rn, 2, fl, 5))
	for _, tc := range []struct {
		name           string
		tasks          []*DependencyTask
		early, waiting int
	}{
		{name: "ran after its dependency succeeded", tasks: []*DependencyTask{dep,
			task("d", ok, "", []string{"a"}, ev(q, 3, rn, 6, ok, 7))}},
		{name: "started before its dependency succeeded", tasks: []*DependencyTask{dep,
			task("d", ok, "", []string{"a"}, ev(q, 3, rn, 4, ok, 7))}, early: 1},
		{name: "started while its dependency runs", tasks: []*DependencyTask{task("a", rn, "", nil, ev(q, 1, rn, 2)),
			task("d", rn, "", []string{"a"}, ev(q, 3, rn, 4))}, early: 1},
		{name: "left waiting", tasks: []*DependencyTask{dep, task("d", q, "", []string{"a"}, ev(q, 3))}, waiting: 1},
		{name: "failed with its dependency", tasks: []*DependencyTask{failed,
			task("d", fl, dockettype.CodeDependencyFailed, []string{"f"}, ev(q, 3, fl, 5))}},
		{name: "ran though its dependency failed", tasks: []*DependencyTask{failed,
			task("d", ok, "", []string{"f"}, ev(q, 3, rn, 6, ok, 7))}, early: 1, waiting: 1},
		{name: "runs anyway", tasks: []*DependencyTask{failed,
			func() *DependencyTask {
				d := task("d", ok, "", []string{"f"}, ev(q, 3, rn, 6, ok, 7))
				d.Run = true
				return d
			}()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := &DependencyView{Graphs: 1, Tasks: map[string]*DependencyTask{}}
			for _, d := range tc.tasks {
				v.Tasks[d.Task.ID] = d
			}
			r := Check(&CheckInput{Dependencies: v})
			if got := r.Anomalies[AnomalyDependencyEarly]; got != tc.early {
				t.Errorf("started early = %d, want %d (%v)", got, tc.early, r.Examples)
			}
			if got := r.Anomalies[AnomalyDependencyWaiting]; got != tc.waiting {
				t.Errorf("left waiting = %d, want %d (%v)", got, tc.waiting, r.Examples)
			}
		})
	}
}
