package faultcheck

import (
	"github.com/docket-dev/docket/dockettype"
)

// DependencyView is what the dependencies scenario made: every task of its
// tenant, read after the drain with its dependency list and history.
type DependencyView struct {
	Graphs int // batches admitted
	Tasks  map[string]*DependencyTask
}

// DependencyTask is one task of the view.
type DependencyTask struct {
	Task   *dockettype.Task
	Events []dockettype.Event
	// Run: submitted with on_dependency_failure "run" (read from the
	// task's input, which marks it, so that a batch whose answer was lost
	// counts as sent).
	Run bool
}

// firstEvent returns the ID of the task's first event into state to, or 0.
func (t *DependencyTask) firstEvent(to dockettype.State) int64 {
	for _, e := range t.Events {
		if e.To == to {
			return e.ID
		}
	}
	return 0
}

// terminalEvent returns the task's terminal event, if it has one.
func (t *DependencyTask) terminalEvent() (dockettype.Event, bool) {
	for _, e := range t.Events {
		if e.To.Terminal() {
			return e, true
		}
	}
	return dockettype.Event{}, false
}

// checkDependencies: no dependent started (queued → running) before every
// one of its dependencies succeeded (before every one ended, for a task
// that runs anyway); none is left waiting, or live at all, once its
// dependencies are terminal; a dependent whose dependency did not succeed
// ended with dependency_failed without running (unless it runs anyway).
// Event IDs order the history: each transition is committed in the
// transaction that appends its event.
func checkDependencies(p *parsed, r *Result) {
	v := p.in.Dependencies
	if v == nil {
		return
	}
	r.DependencyGraphs = v.Graphs
	for id, t := range v.Tasks {
		if len(t.Task.DependsOn) == 0 {
			continue
		}
		r.Dependents++
		if t.Task.Error != nil && t.Task.Error.Code == dockettype.CodeDependencyFailed {
			r.DependentsFailed++
		}
		started := t.firstEvent(dockettype.StateRunning)
		allTerminal, allSucceeded := true, true
		lastEnd := int64(0)
		for _, dep := range t.Task.DependsOn {
			d, ok := v.Tasks[dep]
			if !ok {
				r.flag(AnomalyDependencyEarly, "task %s depends on %s, which the tenant does not hold", id, dep)
				continue
			}
			end, done := d.terminalEvent()
			if !done {
				allTerminal, allSucceeded = false, false
				if started > 0 {
					r.flag(AnomalyDependencyEarly, "task %s started (event %d) while its dependency %s is still %s", id, started, dep, d.Task.State)
				}
				continue
			}
			lastEnd = max(lastEnd, end.ID)
			if end.To != dockettype.StateSucceeded {
				allSucceeded = false
			}
			if started > 0 && started < end.ID {
				r.flag(AnomalyDependencyEarly, "task %s started (event %d) before its dependency %s ended (event %d)", id, started, dep, end.ID)
			}
			if started > 0 && end.To != dockettype.StateSucceeded && !t.Run {
				r.flag(AnomalyDependencyEarly, "task %s ran though its dependency %s ended %s", id, dep, end.To)
			}
		}
		if !allTerminal {
			continue
		}
		if !t.Task.State.Terminal() {
			r.flag(AnomalyDependencyWaiting, "task %s is %s (waiting_on %q) though every dependency is terminal", id, t.Task.State, t.Task.WaitingOn)
			continue
		}
		// It ended after its last dependency did: without success there,
		// and not running anyway, that end must be dependency_failed.
		if end, _ := t.terminalEvent(); !allSucceeded && !t.Run && end.ID > lastEnd &&
			(t.Task.Error == nil || t.Task.Error.Code != dockettype.CodeDependencyFailed) {
			r.flag(AnomalyDependencyWaiting, "task %s ended %s without dependency_failed though a dependency did not succeed", id, t.Task.State)
		}
	}
}
