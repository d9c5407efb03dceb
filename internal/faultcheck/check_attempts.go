package faultcheck

import "github.com/docket-dev/docket/dockettype"

// checkAttempts: a shutdown charges no attempt it cut short. Each
// execution runs the attempt its task's claims say — one more than the
// earlier claims not handed back at shutdown — so a claim after a hand-back
// runs the cut-short attempt again. And every execution a graceful stop cut
// short (stopped by the grace's cancel, after the SIGTERM) was handed back,
// not left to lapse: recovery (lease_lost) would have charged it. A claim
// a stop left without any execution is checkClaimsRun's.
func checkAttempts(p *parsed, r *Result) {
	for _, id := range p.ids {
		claims, releases := 0, 0
		for _, ev := range p.db[id].Events {
			switch {
			case isClaim(ev):
				claims++
				want := claims - releases
				if x, ok := p.execs[lease{id, ev.Epoch}]; ok && x.starts > 0 && x.attempt != want {
					r.flag(AnomalyCharged, "task %s: the execution under epoch %d ran attempt %d, its claims say %d (%d claims, %d handed back at shutdown)",
						id, ev.Epoch, x.attempt, want, claims, releases)
				}
			case isRelease(ev):
				releases++
			case isRetry(ev): // the attempts start over
				claims, releases = 0, 0
			}
		}
	}
	for _, l := range p.leases() {
		x := p.execs[l]
		if !p.graceful[x.pid] || !x.inShutdown || x.finished() {
			continue
		}
		tv, ok := p.db[l.task]
		if !ok {
			continue // checkExecutions flags it
		}
		if end, _ := leaseEnd(tv, l.epoch); end != nil && end.Code == dockettype.CodeLeaseLost {
			r.flag(AnomalyCharged, "task %s: the graceful stop of process %d cut its execution under epoch %d short, and its lease lapsed instead of being handed back (%s)",
				l.task, x.pid, l.epoch, eventChain(tv.Events))
		}
	}
}
