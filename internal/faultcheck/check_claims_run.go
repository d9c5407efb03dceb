package faultcheck

import "github.com/docket-dev/docket/dockettype"

// checkClaimsRun: in a run whose only faults were graceful stops, every
// claim ran. A claim under which nothing ran and whose lease lapsed
// (lease_lost) charged an attempt for nothing, and with no server killed
// or frozen and no connection cut, only a stop explains it: a claim in
// flight when the stop began, committed but never seen by the stopping
// server, which neither ran nor handed back its tasks. (Where servers die
// or lose their database such claims are expected, and the check does not
// apply; nor without execution logs.)
func checkClaimsRun(p *parsed, r *Result) {
	if len(p.graceful) == 0 || p.unseenClaimFaults || len(p.in.Execs) == 0 {
		return
	}
	for _, id := range p.ids {
		evs := p.db[id].Events
		for i, ev := range evs {
			if !isClaim(ev) || i+1 == len(evs) || evs[i+1].Code != dockettype.CodeLeaseLost {
				continue
			}
			if x := p.execs[lease{id, ev.Epoch}]; x == nil || x.starts == 0 {
				r.flag(AnomalyClaimLost, "task %s: its claim under epoch %d (at %s) ran nothing and its lease lapsed, charging the attempt for nothing; the run's only faults were graceful stops, so a stopping server never saw the claim (%s)",
					id, ev.Epoch, ev.At.UTC().Format("15:04:05.000"), eventChain(evs))
			}
		}
	}
}
