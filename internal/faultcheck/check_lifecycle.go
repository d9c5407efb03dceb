package faultcheck

import (
	"fmt"

	"github.com/docket-dev/docket/dockettype"
)

// checkLifecycle: each task's events follow the lifecycle (docs/design.md, "Task
// lifecycle"), and its attempt counter agrees with them.
func checkLifecycle(p *parsed, r *Result) {
	for _, id := range p.ids {
		for _, msg := range lifecycleProblems(p.db[id]) {
			r.flag(AnomalyLifecycle, "task %s: %s", id, msg)
		}
	}
}

// transitions are the lifecycle's edges (docs/design.md, "Task lifecycle"), with
// whether the lease epoch moves on each: claims, cancels, timeouts and
// recoveries bump it; a finish, a retry and a release at shutdown do not.
var transitions = map[[2]dockettype.State]string{
	{dockettype.StateQueued, dockettype.StateRunning}:    "bump",
	{dockettype.StateQueued, dockettype.StateCancelled}:  "bump",
	{dockettype.StateQueued, dockettype.StateTimedOut}:   "bump",
	{dockettype.StateRunning, dockettype.StateSucceeded}: "same",
	{dockettype.StateRunning, dockettype.StateFailed}:    "either", // finish: same; lease_lost on the last attempt: bump
	{dockettype.StateRunning, dockettype.StateQueued}:    "either", // retry, release: same; recovery: bump
	{dockettype.StateRunning, dockettype.StateCancelled}: "bump",
	{dockettype.StateRunning, dockettype.StateTimedOut}:  "bump",
}

// lifecycleProblems checks a task's events against the lifecycle: the
// admission event first, each event starting where the last ended, allowed
// edges only, the lease epoch moving as each edge says, and the attempt
// counter equal to the claims not handed back at shutdown.
func lifecycleProblems(tv *TaskView) []string {
	evs := tv.Events
	if len(evs) == 0 {
		return []string{"no events"}
	}
	var out []string
	if first := evs[0]; first.From != "" || first.To != dockettype.StateQueued || first.Epoch != 0 {
		out = append(out, fmt.Sprintf("first event %q→%s epoch %d, want \"\"→queued epoch 0", first.From, first.To, first.Epoch))
	}
	claims, releases := 0, 0
	for i := 1; i < len(evs); i++ {
		prev, ev := evs[i-1], evs[i]
		if ev.ID <= prev.ID {
			out = append(out, fmt.Sprintf("event %d has ID %d after %d", i, ev.ID, prev.ID))
		}
		if ev.From != prev.To {
			out = append(out, fmt.Sprintf("event %d: %s→%s after one ending in %s", i, ev.From, ev.To, prev.To))
			continue
		}
		if isRetry(ev) {
			// Out of a terminal state, fencing the last lease, with the
			// attempts renewed.
			if ev.Epoch-prev.Epoch != 1 {
				out = append(out, fmt.Sprintf("event %d: retry moves the epoch from %d to %d", i, prev.Epoch, ev.Epoch))
			}
			claims, releases = 0, 0
			continue
		}
		rule, ok := transitions[[2]dockettype.State{ev.From, ev.To}]
		if !ok {
			if !prev.To.Terminal() { // after a terminal event: reported as an overwrite
				out = append(out, fmt.Sprintf("event %d: %s→%s is not a transition of the lifecycle", i, ev.From, ev.To))
			}
			continue
		}
		d := ev.Epoch - prev.Epoch
		switch {
		case rule == "bump" && d != 1, rule == "same" && d != 0, rule == "either" && d != 0 && d != 1:
			out = append(out, fmt.Sprintf("event %d: %s→%s moves the epoch from %d to %d", i, ev.From, ev.To, prev.Epoch, ev.Epoch))
		}
		if isClaim(ev) {
			claims++
		}
		if isRelease(ev) {
			releases++
		}
	}
	if want := claims - releases; tv.Task.Attempt != want {
		out = append(out, fmt.Sprintf("attempt %d, but %d claims and %d releases in its events", tv.Task.Attempt, claims, releases))
	}
	return out
}
