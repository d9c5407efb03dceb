package faultcheck

import "fmt"

// checkTerminalOnce: a terminal state is never overwritten. Each task has
// at most one terminal event, the last, naming the task's state; every
// terminal state a client was shown (a read, a cancel's answer) is the
// final one; and once shown, every later answer shows it too.
func checkTerminalOnce(p *parsed, r *Result) {
	for _, id := range p.ids {
		tv := p.db[id]
		if msg := terminalProblem(tv); msg != "" {
			r.flag(AnomalyOverwritten, "task %s: %s", id, msg)
			continue
		}
		sights := p.sightings[id]
		if s, ok := shownOtherTerminal(sights, tv); ok {
			r.flag(AnomalyOverwritten, "task %s: a client was shown %s (op %d), the task ended %s", id, s.state, s.op, tv.Task.State)
			continue
		}
		if a, b, ok := shownChanged(sights); ok {
			r.flag(AnomalyOverwritten, "task %s: shown %s (op %d), then %s (op %d)", id, a.state, a.op, b.state, b.op)
		}
	}
}

// terminalProblem says what is wrong with a task's terminal history, if
// anything: exactly one terminal event, the last, naming the task's state.
func terminalProblem(tv *TaskView) string {
	terminal, at := 0, -1
	for i, ev := range tv.Events {
		if ev.To.Terminal() {
			terminal++
			if at < 0 {
				at = i
			}
		}
	}
	switch {
	case terminal > 1:
		return fmt.Sprintf("%d terminal events (%s)", terminal, eventChain(tv.Events))
	case terminal == 1 && at != len(tv.Events)-1:
		ev := tv.Events[at+1]
		return fmt.Sprintf("transition %s→%s after the terminal event %s (%s)", ev.From, ev.To, tv.Events[at].To, eventChain(tv.Events))
	case terminal == 1 && tv.Events[at].To != tv.Task.State:
		return fmt.Sprintf("state %s, terminal event %s", tv.Task.State, tv.Events[at].To)
	case terminal == 0 && tv.Task.State.Terminal():
		return fmt.Sprintf("state %s with no terminal event", tv.Task.State)
	}
	return ""
}

// shownOtherTerminal returns the first sighting of a terminal state the
// task did not end in.
func shownOtherTerminal(sights []sighting, tv *TaskView) (sighting, bool) {
	for _, s := range sights {
		if s.state.Terminal() && s.state != tv.Task.State {
			return s, true
		}
	}
	return sighting{}, false
}

// shownChanged returns a terminal sighting and a later one (invoked after
// it completed) that showed another state.
func shownChanged(sights []sighting) (a, b sighting, ok bool) {
	for _, x := range sights {
		if !x.state.Terminal() {
			continue
		}
		for _, y := range sights {
			if y.invoked.After(x.done) && y.state != x.state {
				return x, y, true
			}
		}
	}
	return sighting{}, sighting{}, false
}
