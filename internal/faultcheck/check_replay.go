package faultcheck

import "net/http"

// checkReplay: a key sent again with the same request (the load always
// does) is never refused as a conflict.
func checkReplay(p *parsed, r *Result) {
	for _, op := range p.in.Ops {
		if op.Kind == OpSubmit && op.Status == http.StatusConflict {
			r.flag(AnomalyReplay, "key %s/%s, sent with the same request every time, was answered idempotency_conflict (op %d)", op.Tenant, op.Key, op.Index)
		}
	}
}
