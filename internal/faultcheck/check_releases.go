package faultcheck

import "github.com/docket-dev/docket/dockettype"

// checkReleases: every task handed back at shutdown (running → queued,
// code shutdown) ran again: the next event is a claim, or a client's
// cancel while it waited. It also counts the hand-backs. That each task
// then ended terminal exactly once, and before the drain's bound, is
// checkTerminalOnce's and checkStuck's, as for every task.
func checkReleases(p *parsed, r *Result) {
	for _, id := range p.ids {
		evs := p.db[id].Events
		for i, ev := range evs {
			if !isRelease(ev) {
				continue
			}
			r.HandedBack++
			switch {
			case i+1 == len(evs):
				r.flag(AnomalyNotRerun, "task %s was handed back at shutdown (epoch %d) and never claimed again (%s)", id, ev.Epoch, eventChain(evs))
			case isClaim(evs[i+1]), evs[i+1].To == dockettype.StateCancelled:
			default:
				r.flag(AnomalyNotRerun, "task %s was handed back at shutdown (epoch %d), then went %s→%s before any claim (%s)",
					id, ev.Epoch, evs[i+1].From, evs[i+1].To, eventChain(evs))
			}
		}
	}
}
