package faultcheck

import (
	"cmp"
	"slices"
	"time"

	"github.com/docket-dev/docket/dockettype"
)

// FlowView is what the flow scenario's tenant ran: its rate limit, the
// concurrency per key of its workflow, and its tasks with their
// histories, read from the database after the run.
type FlowView struct {
	RatePerSecond, Burst, ConcurrencyPerKey int
	// RateLifted, when set, is when the scenario removed the rate limit
	// (just before its call): the one-second bound holds for the starts
	// recorded up to liftMargin before it.
	RateLifted *time.Time
	Submitted  int // tasks the scenario submitted
	Tasks      []FlowTask
}

// FlowTask is one task of the flow scenario.
type FlowTask struct {
	ID     string
	Key    string
	State  dockettype.State
	Events []dockettype.Event
}

// checkFlow: in no one-second window did the tenant's tasks start more
// than rate + burst times (queued → running events, by their commit
// times), and no concurrency key ever had more tasks running than its
// limit (replaying each key's events in history order: a task runs from a
// queued → running event until its next event).
func checkFlow(p *parsed, r *Result) {
	v := p.in.Flow
	if v == nil {
		return
	}
	type ev struct {
		dockettype.Event
		key string
	}
	var all []ev
	for _, t := range v.Tasks {
		if t.State.Terminal() {
			r.FlowFinished++
		}
		for _, e := range t.Events {
			all = append(all, ev{e, t.Key})
		}
	}
	r.FlowTasks = len(v.Tasks)
	if len(v.Tasks) < v.Submitted {
		r.flag(AnomalyFlowLimit, "the flow tenant holds %d tasks, %d were submitted", len(v.Tasks), v.Submitted)
	}
	slices.SortFunc(all, func(a, b ev) int { return cmp.Compare(a.ID, b.ID) })
	var starts []time.Time
	running := map[string]int{}       // key → tasks running
	isRunning := map[string]bool{}    // task → running
	lastEnd := map[string]time.Time{} // key → when its last running task ended
	for _, e := range all {
		switch {
		case e.From == dockettype.StateQueued && e.To == dockettype.StateRunning:
			if v.RateLifted == nil || e.At.Before(v.RateLifted.Add(-liftMargin)) {
				starts = append(starts, e.At)
			}
			// Started by the finish that freed its key's slot (the
			// hand-off writes both with the finish's time).
			if end, ok := lastEnd[e.key]; ok && end.Equal(e.At) {
				r.FlowHandOffs++
			}
			isRunning[e.TaskID] = true
			running[e.key]++
			r.FlowPeakPerKey = max(r.FlowPeakPerKey, running[e.key])
			if running[e.key] > v.ConcurrencyPerKey {
				r.flag(AnomalyFlowLimit, "key %s had %d tasks running at event %d (task %s), limit %d",
					e.key, running[e.key], e.ID, e.TaskID, v.ConcurrencyPerKey)
			}
		case isRunning[e.TaskID]:
			isRunning[e.TaskID] = false
			running[e.key]--
			lastEnd[e.key] = e.At
		}
	}
	r.FlowStarts = len(starts) // under the rate limit
	slices.SortFunc(starts, func(a, b time.Time) int { return a.Compare(b) })
	j := 0
	for i := range starts {
		for !starts[j].Add(time.Second).After(starts[i]) {
			j++
		}
		if n := i - j + 1; n > r.FlowPeakPerSecond {
			r.FlowPeakPerSecond = n
			if n > v.RatePerSecond+v.Burst {
				r.flag(AnomalyFlowLimit, "%d starts in the second from %s, limit %d + %d",
					n, starts[j].Format(time.RFC3339Nano), v.RatePerSecond, v.Burst)
			}
		}
	}
}

// liftMargin: a start's recorded time is its claim transaction's clock,
// read before the transaction waits for the write lock (SQLite has one
// writer; a node restarting after a kill queues its claims). A claim that
// read its clock just before the lift may read the rules just after it,
// find no limit and start many tasks "before" the lift. Starts recorded in
// the last second before the lift are therefore not held to the bound
// (seen once in CI: 17 starts recorded within 20 ms of the lift, limit
// 10 + 2).
const liftMargin = time.Second
