// Package fairshare decides how one claim divides its slots among tenants
// with ready work. It is stride scheduling: each tenant has a virtual time
// that advances by 1/weight for every task it is given, and the next slot
// goes to the tenant with the lowest virtual time. Over any window, backlogged
// tenants receive slots in proportion to their weights, and a tenant that
// becomes ready joins at the pool's current virtual time, so it neither waits
// behind another tenant's backlog nor replays credit it banked while idle.
//
// Backends call Allocate inside their claim transaction with the tenants
// they read (at most Limit of them, lowest virtual time first) and write back
// the returned virtual times.
package fairshare

import "container/heap"

// Tenant is one tenant with ready work in a pool.
type Tenant struct {
	ID     string
	Queued int     // ready tasks
	VTime  float64 // virtual time before this claim
	Weight int     // >= 1
}

// Grant is one tenant's share of a claim.
type Grant struct {
	Tenant string
	Count  int     // tasks to take
	Queued int     // ready tasks the tenant had
	VTime  float64 // virtual time after the grant
	Weight int     // the tenant's weight (>= 1)
}

// Charge is the virtual time n tasks cost the tenant of g.
func (g Grant) Charge(n int) float64 { return float64(n) / float64(g.Weight) }

// Plan is the outcome of Allocate.
type Plan struct {
	Grants []Grant
	// VClock is the start time of the last slot granted: the pool's new
	// virtual clock, at which newly ready tenants join.
	VClock float64
}

// Allocate grants up to limit slots among tenants by stride scheduling.
// Ties break by tenant ID so that the result is deterministic.
func Allocate(tenants []Tenant, limit int) Plan {
	h := make(tenantHeap, 0, len(tenants))
	for _, t := range tenants {
		if t.Queued <= 0 {
			continue
		}
		if t.Weight < 1 {
			t.Weight = 1
		}
		h = append(h, &slot{Tenant: t, vtime: t.VTime})
	}
	heap.Init(&h)
	var plan Plan
	for n := 0; n < limit && h.Len() > 0; n++ {
		s := h[0]
		plan.VClock = s.vtime
		s.count++
		s.vtime += 1 / float64(s.Weight)
		if s.count >= s.Queued {
			heap.Pop(&h)
			plan.Grants = append(plan.Grants, s.grant())
			continue
		}
		heap.Fix(&h, 0)
	}
	for _, s := range h {
		if s.count > 0 {
			plan.Grants = append(plan.Grants, s.grant())
		}
	}
	return plan
}

type slot struct {
	Tenant
	vtime float64
	count int
}

func (s *slot) grant() Grant {
	return Grant{Tenant: s.ID, Count: s.count, Queued: s.Queued, VTime: s.vtime, Weight: s.Weight}
}

type tenantHeap []*slot

func (h tenantHeap) Len() int { return len(h) }
func (h tenantHeap) Less(i, j int) bool {
	if h[i].vtime != h[j].vtime {
		return h[i].vtime < h[j].vtime
	}
	return h[i].ID < h[j].ID
}
func (h tenantHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *tenantHeap) Push(x any)   { *h = append(*h, x.(*slot)) }
func (h *tenantHeap) Pop() any {
	old := *h
	s := old[len(old)-1]
	*h = old[:len(old)-1]
	return s
}
