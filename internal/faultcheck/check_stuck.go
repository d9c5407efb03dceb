package faultcheck

// checkStuck: every acknowledged task was terminal when the drain ended,
// within its bound (DrainTimeout after the faults healed). A task still
// queued or running at the bound is stuck even if it ended later (by its
// deadline, say). A task missing from the database is checkLost's.
func checkStuck(p *parsed, r *Result) {
	for _, k := range p.keys {
		if !p.acked[k] {
			continue
		}
		for _, id := range p.keyTasks[k] {
			tv, ok := p.db[id]
			if !ok || tv.Task.Tenant != k.tenant {
				continue
			}
			if st, ok := p.in.UnfinishedAtDrain[id]; ok {
				r.flag(AnomalyStuck, "task %s was still %s %s after the faults healed (it ended %s, %s)",
					id, st, p.in.DrainTimeout, tv.Task.State, eventChain(tv.Events))
				continue
			}
			if !tv.Task.State.Terminal() {
				r.flag(AnomalyStuck, "task %s is %s after the drain", id, tv.Task.State)
			}
		}
	}
}
