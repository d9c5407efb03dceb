package engine

import (
	"context"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/store/fairshare"
)

// promoteBatch bounds how many delayed tasks (retries, scheduled tasks) one
// claim makes ready.
const promoteBatch = 256

// Claim moves up to p.Limit ready tasks of p.Pool to running; see
// store.Claimer. Every read is an index range scan bounded by the limit:
// the ready tenants (at most Limit, by virtual time) and, per tenant granted
// slots, its first ready tasks.
//
// A claim locks no pool-wide row. It locks the tasks it picks (skipping
// rows other transactions hold) and, last, the tenant_queues rows of the
// tenants it served, so claims on several nodes overlap except on the
// tenants they both serve, and then only for the end of the transaction.
func (s *Store) Claim(ctx context.Context, p *store.ClaimParams) ([]*store.ClaimedTask, error) {
	if p.Limit <= 0 || !p.Pool.Valid() || p.LeaseTTL <= 0 {
		return nil, invalid("claim", "limit, pool and lease TTL are required")
	}
	var out []*store.ClaimedTask
	err := s.b.Write(ctx, "claim", func(tx Tx) error {
		var err error
		out, err = claim(tx, p)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func claim(tx Tx, p *store.ClaimParams) ([]*store.ClaimedTask, error) {
	c := newChanges()
	due, err := tx.PromoteDue(p.Pool, p.Now, promoteBatch)
	if err != nil {
		return nil, err
	}
	for _, tenant := range due {
		c.ready(p.Pool, tenant, 1)
	}
	// Written now, so that the tenants they made ready are read below.
	if err := c.flushQueued(tx); err != nil {
		return nil, err
	}
	tenants, err := tx.ReadyTenants(p.Pool, p.Limit)
	if err != nil || len(tenants) == 0 {
		return nil, err
	}
	plan := fairshare.Allocate(tenants, p.Limit)
	picked, err := tx.PickReady(p.Pool, plan.Grants)
	if err != nil {
		return nil, err
	}
	var ids []string
	rows := make([]TenantQueue, len(plan.Grants))
	for i, g := range plan.Grants {
		got := picked[i]
		ids = append(ids, got...)
		rows[i] = TenantQueue{Tenant: g.Tenant, VTime: g.VTime, Reset: -1, Taken: len(got)}
		// The ready count is a cache of the index. Fewer tasks than it
		// promised means that it drifted, or only that other transactions
		// hold some of them (a cancel or a timeout that will apply its own
		// change to the count). So count the tenant's ready tasks, held or
		// not (bounded by the count), and trust that.
		if len(got) < g.Count && len(got) < g.Queued {
			ready, err := tx.CountReady(p.Pool, g.Tenant, g.Queued)
			if err != nil {
				return nil, err
			}
			if ready < g.Queued {
				rows[i].Reset = ready
			}
		}
	}
	if err := tx.SetTenantQueues(p.Pool, rows); err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, nil
	}
	claimed, err := tx.Lease(ids, p.Owner, p.Now.Add(p.LeaseTTL), p.Now)
	if err != nil {
		return nil, err
	}
	claimed = inOrder(ids, claimed)
	for _, ct := range claimed {
		c.event(ct.Task.ID, dockettype.StateQueued, dockettype.StateRunning, ct.Task.LeaseEpoch, "")
	}
	return claimed, c.flush(tx, p.Now)
}

// inOrder returns the claimed tasks in dispatch order (the order of ids).
func inOrder(ids []string, claimed []*store.ClaimedTask) []*store.ClaimedTask {
	byID := make(map[string]*store.ClaimedTask, len(claimed))
	for _, c := range claimed {
		byID[c.Task.ID] = c
	}
	out := make([]*store.ClaimedTask, 0, len(claimed))
	for _, id := range ids {
		if c, ok := byID[id]; ok {
			out = append(out, c)
		}
	}
	return out
}
