package faultcheck

import "fmt"

// checkDuplicated: one task per key. No key was bound to two tasks, and
// every task of the run's tenants was made by a key some answer names.
func checkDuplicated(p *parsed, r *Result) {
	for _, k := range p.keys {
		if ids := p.keyTasks[k]; len(ids) > 1 {
			r.flag(AnomalyDuplicated, "key %s/%s was answered with %d tasks: %v", k.tenant, k.key, len(ids), ids)
		}
	}
	for _, id := range p.ids {
		if _, ok := p.owner[id]; ok {
			continue
		}
		tv := p.db[id]
		why := "a key that made a second task"
		if r.Unresolved > 0 {
			why += fmt.Sprintf(", or the task of one of the %d keys whose replay got no answer", r.Unresolved)
		}
		r.flag(AnomalyDuplicated, "task %s (tenant %s, %s) was made by no answered submit: %s", id, tv.Task.Tenant, tv.Task.State, why)
	}
}
