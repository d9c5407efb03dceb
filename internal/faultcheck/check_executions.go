package faultcheck

import (
	"fmt"

	"github.com/docket-dev/docket/dockettype"
)

// checkExecutions matches the probe's executions with the claims in the
// events: every execution runs under a claim's lease, at most one per
// lease, and no task has more executions than claims. It also counts the
// executions, claims, lease recoveries, results discarded and tasks run
// again, and notes leases taken from live workers (a finding).
func checkExecutions(p *parsed, r *Result) {
	finishedOK := map[string][]int64{} // task → epochs whose execution returned a result
	retried := map[string]int{}        // task → executions that failed retryably
	for _, e := range p.in.Execs {
		switch e.Event {
		case execStart:
			r.Executions++
		case execEnd:
			switch e.Outcome {
			case "ok":
				finishedOK[e.Task] = append(finishedOK[e.Task], e.Epoch)
			case "retry":
				retried[e.Task]++
			}
		}
	}
	perTask := map[string]int{}
	for _, l := range p.leases() {
		n := p.execs[l].starts
		if n == 0 {
			continue // an end line alone: no execution started
		}
		perTask[l.task] += n
		tv, ok := p.db[l.task]
		if !ok {
			r.flag(AnomalyExecutions, "task %s was executed (epoch %d) and is not in the database", l.task, l.epoch)
			continue
		}
		if n > 1 {
			r.flag(AnomalyExecutions, "task %s: %d executions under the one lease of epoch %d", l.task, n, l.epoch)
		}
		if _, claimed := leaseEnd(tv, l.epoch); !claimed {
			r.flag(AnomalyExecutions, "task %s: an execution under epoch %d, which no claim made", l.task, l.epoch)
		}
	}
	for _, id := range p.ids {
		tv := p.db[id]
		claims := 0
		var successEpoch int64 = -1
		for _, ev := range tv.Events {
			if isClaim(ev) {
				claims++
			}
			if ev.Code == dockettype.CodeLeaseLost {
				r.LeaseRecoveries++
			}
			if ev.To == dockettype.StateSucceeded {
				successEpoch = ev.Epoch
			}
		}
		r.Claims += claims
		if perTask[id] > claims {
			r.flag(AnomalyExecutions, "task %s: %d executions, %d claims", id, perTask[id], claims)
		}
		if perTask[id] > 1+retried[id] {
			r.ReExecuted++
		}
		for _, epoch := range finishedOK[id] {
			if !(tv.Task.State == dockettype.StateSucceeded && epoch == successEpoch) {
				r.DiscardedResults++
			}
		}
	}
	if p.in.NodesStayUp && r.LeaseRecoveries > 0 {
		r.Findings = append(r.Findings, fmt.Sprintf(
			"%d leases recovered (lease_lost) although every node stayed up and connected: leases taken from live workers; %d finished results discarded, %d tasks run again",
			r.LeaseRecoveries, r.DiscardedResults, r.ReExecuted))
	}
}
