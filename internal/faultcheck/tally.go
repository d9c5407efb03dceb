package faultcheck

import "github.com/docket-dev/docket/dockettype"

// tally fills the figures of r that count the input — calls by kind, keys
// acknowledged and resolved, tasks by state, graceful stops — before the
// passes run. It checks nothing.
func tally(p *parsed, r *Result) {
	for _, op := range p.in.Ops {
		switch op.Kind {
		case OpFault:
			r.Faults++
			continue
		case OpSubmit:
			r.Submits++
		case OpCancel:
			r.Cancels++
		case OpRead:
			r.Reads++
		}
		r.Operations++
		if op.Outcome == Indeterminate {
			r.Indeterminate++
		}
	}
	for _, k := range p.keys {
		if p.acked[k] {
			r.Acknowledged++
		}
		if !p.ackedInLoad[k] && p.replayedInResolve[k] {
			r.ResolvedCommitted++
			if p.only503[k] {
				r.CommittedDespite503++
			}
		}
	}
	for k, ok := range p.resolved {
		if !ok && !p.acked[k] {
			r.Unresolved++
		}
	}
	for _, id := range p.ids {
		t := p.db[id].Task
		r.Tasks++
		r.States[t.State]++
		if t.State == dockettype.StateFailed && t.Error != nil {
			r.FailedCodes[string(t.Error.Code)]++
		}
	}
	r.GracefulStops = len(p.graceful)
}
