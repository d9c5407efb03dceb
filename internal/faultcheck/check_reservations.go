package faultcheck

import "sort"

// checkReservations compares each tenant's in-flight count with its
// unfinished tasks: a terminal task whose reservation was not released (or
// released twice) shows as a difference, and would shrink (or grow) the
// tenant's limit for good.
func checkReservations(p *parsed, r *Result) {
	unfinished := map[string]int{}
	for _, tv := range p.db {
		if !tv.Task.State.Terminal() {
			unfinished[tv.Task.Tenant]++
		}
	}
	inFlight := p.in.TenantInFlight
	tenants := make([]string, 0, len(inFlight))
	for t := range inFlight {
		tenants = append(tenants, t)
	}
	sort.Strings(tenants)
	for _, t := range tenants {
		if inFlight[t] != unfinished[t] {
			r.flag(AnomalyReservation, "tenant %s counts %d tasks in flight and has %d unfinished", t, inFlight[t], unfinished[t])
		}
	}
}
