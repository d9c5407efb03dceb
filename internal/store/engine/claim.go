package engine

import (
	"cmp"
	"context"
	"errors"
	"slices"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/store/fairshare"
)

// promoteBatch bounds how many delayed tasks (retries, scheduled tasks) one
// claim makes ready.
const promoteBatch = 256

// Claim moves up to p.Limit ready tasks of p.Queue to running; see
// store.Claimer. Every read is an index range scan bounded by the limit:
// the ready tenants (at most Limit, by virtual time) and, per tenant granted
// slots, its first ready tasks.
//
// A claim locks no pool-wide row. It locks the tasks it picks (skipping
// rows other transactions hold) and, as its last statement, the
// tenant_queues rows of the tenants it served, so claims on several nodes
// overlap except on the tenants they both serve, and then only for that
// statement and the commit.
func (s *Store) Claim(ctx context.Context, p *store.ClaimParams) ([]*store.ClaimedTask, error) {
	if p.Limit <= 0 || !p.Queue.Valid() || p.LeaseTTL <= 0 {
		return nil, invalid("claim", "limit, queue and lease TTL are required")
	}
	var out []*store.ClaimedTask
	var err error
	for range 3 {
		err = s.b.Write(ctx, "claim", func(tx Tx) error {
			var err error
			out, err = claim(tx, p)
			return err
		})
		if !errors.Is(err, ErrFlowChanged) {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ErrFlowChanged is a backend's answer to Take when a pause or a rate limit
// was committed after the claim read the rules: the transaction is rolled
// back and the claim runs again under the rules.
var ErrFlowChanged = errors.New("claim: flow rules changed during the claim")

func claim(tx Tx, p *store.ClaimParams) ([]*store.ClaimedTask, error) {
	c := newChanges()
	due, rules, err := tx.PromoteDue(p.Queue, p.Now, promoteBatch)
	if err != nil {
		return nil, err
	}
	if p.Outcome != nil {
		*p.Outcome = store.ClaimOutcome{}
	}
	for _, tenant := range due {
		c.ready(p.Queue, tenant, 1)
	}
	// Written now, so that the tenants they made ready are read below.
	if err := c.flushQueued(tx); err != nil {
		return nil, err
	}
	if fr := newFlowRules(rules); fr != nil {
		return claimFlow(tx, p, fr, c)
	}
	tenants, err := tx.ReadyTenants(p.Queue, p.Tenant, p.Limit, nil)
	if err != nil || len(tenants) == 0 {
		return nil, err
	}
	plan := fairshare.Allocate(tenants, p.Limit)
	taken, err := tx.Take(p.Queue, plan.Grants, p.Owner, p.Now.Add(p.LeaseTTL), p.Now)
	if err != nil {
		return nil, err
	}
	// The ready counts change only by deltas, each in the transaction
	// that changes a task's readiness (admission, claim, cancel, timeout,
	// recovery, promotion), so they are exact without a lock on the
	// tenant for the whole claim. Finding fewer tasks than the count says
	// means that other transactions hold them (a cancel, another node's
	// claim): they apply their own deltas.
	var claimed []*store.ClaimedTask
	rows := make([]TenantQueue, len(plan.Grants))
	for i, g := range plan.Grants {
		got := dispatchOrder(taken[i])
		claimed = append(claimed, got...)
		rows[i] = TenantQueue{Tenant: g.Tenant, Charge: g.Charge(len(got)), Taken: len(got)}
	}
	if p.Outcome != nil {
		// More tenants than it read may have ready work when it read as
		// many as its limit; otherwise the counts it read tell.
		queued := 0
		for _, t := range tenants {
			queued += t.Queued
		}
		p.Outcome.More = len(tenants) >= p.Limit || queued > len(claimed)
	}
	for _, ct := range claimed {
		c.event(ct.Task.ID, dockettype.StateQueued, dockettype.StateRunning, ct.Task.LeaseEpoch, "")
	}
	if err := c.flush(tx, p.Now); err != nil {
		return nil, err
	}
	// The tenants' rows last, in tenant order (two claims serving the
	// same tenants lock them in the same order): another node's claim of
	// the same tenants waits for them from here until this transaction
	// commits, so the events (which lock nothing) are written before, not
	// while they wait.
	slices.SortFunc(rows, func(a, b TenantQueue) int { return cmp.Compare(a.Tenant, b.Tenant) })
	return claimed, tx.SetTenantQueues(p.Queue, rows)
}

// dispatchOrder sorts one tenant's claimed tasks as they are dispatched:
// higher priority first, then older (task IDs sort by creation).
func dispatchOrder(tasks []*store.ClaimedTask) []*store.ClaimedTask {
	slices.SortFunc(tasks, func(a, b *store.ClaimedTask) int {
		return cmp.Or(cmp.Compare(b.Task.Priority, a.Task.Priority), cmp.Compare(a.Task.ID, b.Task.ID))
	})
	return tasks
}
