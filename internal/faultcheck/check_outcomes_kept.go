package faultcheck

import (
	"fmt"

	"github.com/docket-dev/docket/dockettype"
)

// checkOutcomesKept: a graceful stop loses no finished outcome. Every
// execution of a server stopped gracefully (a term fault that ended OK)
// that returned an outcome after the SIGTERM — inside the shutdown's grace
// — is what its lease ended with: succeeded under that epoch for a result;
// a retry or a failure for an error (or a hand-back: an error returned
// after the grace's cancel is taken for the cancel's). Only a cancel or
// the deadline may take the lease first. A lease recovered instead
// (lease_lost: the outcome was dropped and the lease left to lapse), or
// still running, lost the outcome.
//
// In every scenario, an execution that succeeded is never handed back at
// shutdown instead. The executions a stop cut short are checkAttempts' and
// checkReleases'.
func checkOutcomesKept(p *parsed, r *Result) {
	for _, l := range p.leases() {
		x := p.execs[l]
		inGrace := p.graceful[x.pid] && x.inShutdown && x.finished()
		if inGrace {
			r.FinishedInGrace++
		}
		tv, ok := p.db[l.task]
		if !ok {
			continue // checkExecutions flags it
		}
		end, claimed := leaseEnd(tv, l.epoch)
		if !claimed {
			continue // checkExecutions flags it
		}
		switch {
		case inGrace && !keepsOutcome(x.outcome, end, l.epoch):
			r.flag(AnomalyOutcomeLost, "task %s: its execution under epoch %d returned %s during the graceful stop of process %d, and its lease %s (%s)",
				l.task, l.epoch, x.outcome, x.pid, describeEnd(end), eventChain(tv.Events))
		case x.outcome == "ok" && end != nil && isRelease(*end):
			r.flag(AnomalyOutcomeLost, "task %s: its execution under epoch %d succeeded, and its lease was handed back at shutdown instead (%s)",
				l.task, l.epoch, eventChain(tv.Events))
		}
	}
}

// keepsOutcome reports whether end, the event that ended the lease of
// epoch, carries an execution's outcome (ok, retry or fail), or was a
// cancel or timeout that took the lease first.
func keepsOutcome(outcome string, end *dockettype.Event, epoch int64) bool {
	switch {
	case end == nil:
		return false
	case end.To == dockettype.StateCancelled, end.To == dockettype.StateTimedOut:
		return true
	case end.Epoch != epoch:
		return false // a recovery (lease_lost) took the lease: it bumps the epoch
	}
	switch outcome {
	case "ok":
		return end.To == dockettype.StateSucceeded
	case "retry":
		return end.To == dockettype.StateQueued || end.To == dockettype.StateFailed
	case "fail":
		return end.To == dockettype.StateFailed || isRelease(*end)
	}
	return false
}

// describeEnd says how a lease ended: "ended running→queued (epoch 3, code
// lease_lost)", or "is still running".
func describeEnd(end *dockettype.Event) string {
	if end == nil {
		return "is still running"
	}
	s := fmt.Sprintf("ended %s→%s (epoch %d", end.From, end.To, end.Epoch)
	if end.Code != "" {
		s += ", code " + string(end.Code)
	}
	return s + ")"
}
