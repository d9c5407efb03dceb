package faultcheck

import "fmt"

// checkTerminalOnce: a terminal state is never overwritten. Between two
// retries (the only way out of a terminal state), and after the last, each
// task has at most one terminal event, the last of that stretch, and the
// final one names the task's state; every terminal state a client was
// shown (a read, a cancel's answer) is the final one; and once shown,
// every later answer shows it too. A retried task is checked on its events
// alone: what a client saw before a retry may rightly differ after it.
func checkTerminalOnce(p *parsed, r *Result) {
	for _, id := range p.ids {
		tv := p.db[id]
		if msg := terminalProblem(tv); msg != "" {
			r.flag(AnomalyOverwritten, "task %s: %s", id, msg)
			continue
		}
		if retried(tv) {
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

func retried(tv *TaskView) bool {
	for _, ev := range tv.Events {
		if isRetry(ev) {
			return true
		}
	}
	return false
}

// terminalProblem says what is wrong with a task's terminal history, if
// anything: in each stretch between retries exactly one terminal event,
// the stretch's last (the retry follows it), and in the last stretch at
// most one, the last event, naming the task's state.
func terminalProblem(tv *TaskView) string {
	start := 0
	for i, ev := range tv.Events {
		if !isRetry(ev) {
			continue
		}
		stretch := tv.Events[start:i]
		terminal := 0
		for _, e := range stretch {
			if e.To.Terminal() {
				terminal++
			}
		}
		if terminal != 1 || len(stretch) == 0 || !stretch[len(stretch)-1].To.Terminal() {
			return fmt.Sprintf("retry after %d terminal events, not right after one (%s)", terminal, eventChain(tv.Events))
		}
		start = i + 1
	}
	events := tv.Events[start:]
	terminal, at := 0, -1
	for i, ev := range events {
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
	case terminal == 1 && at != len(events)-1:
		ev := events[at+1]
		return fmt.Sprintf("transition %s→%s after the terminal event %s (%s)", ev.From, ev.To, events[at].To, eventChain(tv.Events))
	case terminal == 1 && events[at].To != tv.Task.State:
		return fmt.Sprintf("state %s, terminal event %s", tv.Task.State, events[at].To)
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
