package faultcheck

// checkLost: every task a key was bound to — a submit answered with it, or
// a dropped answer that named it — is in the database under the key's
// tenant, and no read or cancel of an acknowledged task was answered
// not_found.
func checkLost(p *parsed, r *Result) {
	for _, k := range p.keys {
		for _, id := range p.keyTasks[k] {
			tv, ok := p.db[id]
			switch {
			case !ok:
				r.flag(AnomalyLost, "task %s (key %s/%s) was committed and is not in the database", id, k.tenant, k.key)
			case tv.Task.Tenant != k.tenant:
				r.flag(AnomalyLost, "task %s (key %s/%s) belongs to tenant %s", id, k.tenant, k.key, tv.Task.Tenant)
			}
		}
	}
	for _, op := range p.notFound {
		if k, ok := p.owner[op.TaskID]; ok && p.acked[k] {
			r.flag(AnomalyLost, "task %s (key %s/%s) was answered not_found (op %d)", op.TaskID, k.tenant, k.key, op.Index)
		}
	}
}
