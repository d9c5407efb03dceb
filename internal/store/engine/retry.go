package engine

import (
	"cmp"
	"context"
	"errors"
	"slices"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// retryable reports whether a task in state s may be retried.
func retryable(s dockettype.State) bool {
	return s == dockettype.StateFailed || s == dockettype.StateTimedOut || s == dockettype.StateCancelled
}

// Retry queues terminal tasks again; see store.Failures.
//
// The tasks are read, then each retryable task checked against the gates
// of its pool and tenant like an admission (capacity, then the tenant's
// limit); the ones that fit are revived. A task revived by another
// transaction meanwhile (its result row is gone when this one deletes it)
// is answered as it is now, not retryable.
//
// As an admission does, a backend that reads gates without a lock
// (GateReader) revives first and locks the gate rows last, just before
// their counts are written: a retry of a thousand tasks (a bulk retry's
// batch) holds the rows every admission of its pool locks only for its
// counters, not for the revive or its events. When the room it counted on
// was taken meanwhile, it runs again with the gates locked first.
func (s *Store) Retry(ctx context.Context, p *store.RetryParams) ([]store.RetryResult, error) {
	for _, it := range p.Items {
		if it.TaskID == "" || it.Tenant == "" || !it.Queue.Valid() {
			return nil, invalid("retry", "task ID, tenant and queue are required")
		}
	}
	if len(p.Items) == 0 {
		return []store.RetryResult{}, nil
	}
	var out []store.RetryResult
	run := func(lateGates bool) error {
		return s.b.Write(ctx, "retry", func(tx Tx) error {
			var err error
			out, err = retry(tx, p, lateGates)
			return err
		})
	}
	err := run(true)
	if errors.Is(err, errGatesMoved) {
		err = run(false)
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// retry decides and writes one retry transaction. The tasks' states are
// read first (a primary-key probe each); the tenant and pool of each item
// are checked by the revive itself, and only a call that wants the tasks
// back (not Quiet) reads them.
func retry(tx Tx, p *store.RetryParams, lateGates bool) ([]store.RetryResult, error) {
	out := make([]store.RetryResult, len(p.Items))
	ids := taskIDs(p.Items, func(it *store.RetryItem) string { return it.TaskID })
	states, err := tx.States(ids)
	if err != nil {
		return nil, err
	}
	var candidates []int
	var pools []dockettype.Pool
	var tenants []string
	seen := map[string]bool{}
	for i, it := range p.Items {
		st, ok := states[it.TaskID]
		switch {
		case !ok:
			out[i] = store.RetryResult{Outcome: store.RetryNotFound}
		case !retryable(st) || seen[it.TaskID]:
			out[i] = store.RetryResult{Outcome: store.NotRetryable}
		default:
			seen[it.TaskID] = true
			candidates = append(candidates, i)
			pools = append(pools, it.Queue.Pool())
			tenants = append(tenants, it.Tenant)
		}
	}
	var rows []Revive
	revived := map[string]bool{}
	reader, late := tx.(GateReader)
	late = late && lateGates
	if len(candidates) > 0 {
		var gates *Gates
		var err error
		if late {
			gates, err = reader.ReadGates(sortedUnique(pools), sortedUnique(tenants))
		} else {
			gates, err = tx.LockGates(sortedUnique(pools), sortedUnique(tenants))
		}
		if err != nil {
			return nil, err
		}
		// A retry is an operator's (or the tenant's) decision about a task
		// already admitted, not a submission: take does not check the
		// pauses that refuse submissions, and the retried task waits for
		// the resume like the rest.
		for _, i := range candidates {
			it := p.Items[i]
			switch take(gates, &store.AdmitItem{Pool: it.Queue.Pool(), Tenant: it.Tenant, PoolCapacity: it.PoolCapacity}) {
			case store.QueueFull:
				out[i] = store.RetryResult{Outcome: store.RetryQueueFull}
			case store.TenantQuotaExceeded:
				out[i] = store.RetryResult{Outcome: store.RetryTenantQuotaExceeded}
			default:
				rows = append(rows, Revive{TaskID: it.TaskID, Tenant: it.Tenant, Queue: it.Queue})
			}
		}
	}
	if len(rows) > 0 {
		slices.SortFunc(rows, func(a, b Revive) int { return cmp.Compare(a.TaskID, b.TaskID) })
		moved, err := tx.Revive(rows, p.Now)
		if err != nil {
			return nil, err
		}
		c := newChanges()
		for _, m := range moved {
			// A revived task's result row went: its bytes leave the
			// tenant's stored bytes.
			if m.ResultBytes != 0 {
				c.stored(m.Tenant, -m.ResultBytes)
			}
			c.events = append(c.events, Event{TaskID: m.TaskID, From: m.From, To: dockettype.StateQueued,
				Epoch: m.Epoch, Code: dockettype.CodeRetried, By: p.By})
		}
		if late {
			// The events lock nothing: written before the gates are
			// locked, they are not part of the time an admission of the
			// same pool waits on this retry.
			if len(c.events) > 0 {
				if err := tx.InsertEvents(c.events, p.Now); err != nil {
					return nil, err
				}
				c.events = c.events[:0]
			}
			if err := checkRevivedUnderLocks(tx, p.Items, moved); err != nil {
				return nil, err
			}
		}
		inFlight := map[counterKey]int64{}
		for _, m := range moved {
			if m.Ready {
				c.ready(m.Queue, m.Tenant, 1)
			}
			if m.Key != "" {
				// Back waiting on its key: the flush gives it a slot if
				// the key has one free (oldest waiting task first).
				c.keyWaits(KeyRef{Tenant: m.Tenant, Workflow: m.Workflow, Key: m.Key})
			}
			inFlight[counterKey{ScopePool, string(m.Queue.Pool())}]++
			inFlight[counterKey{ScopeTenant, m.Tenant}]++
			revived[m.TaskID] = true
		}
		if len(inFlight) > 0 {
			deltas := make([]CounterDelta, 0, len(inFlight))
			for k, n := range inFlight {
				deltas = append(deltas, CounterDelta{Scope: k.scope, Key: k.key, N: n})
			}
			slices.SortFunc(deltas, func(a, b CounterDelta) int {
				return cmp.Or(cmp.Compare(a.Scope, b.Scope), cmp.Compare(a.Key, b.Key))
			})
			if err := tx.AddInFlight(deltas, false); err != nil {
				return nil, err
			}
		}
		if err := c.flush(tx, p.Now); err != nil {
			return nil, err
		}
	}
	// A candidate not revived was changed by another transaction since its
	// state was read, or is not of the item's tenant or pool.
	for i, it := range p.Items {
		if out[i].Outcome != 0 {
			continue
		}
		if revived[it.TaskID] {
			out[i].Outcome = store.Retried
		} else {
			out[i].Outcome = store.NotRetryable
		}
	}
	if p.Quiet {
		return out, nil
	}
	tasks, err := tx.ReadTasks(ids)
	if err != nil {
		return nil, err
	}
	for i, it := range p.Items {
		t := tasks[it.TaskID]
		switch {
		case t == nil || t.Tenant != it.Tenant:
			out[i] = store.RetryResult{Outcome: store.RetryNotFound}
		case out[i].Outcome == store.Retried, out[i].Outcome == store.NotRetryable:
			out[i].Task = t
		}
	}
	return out, nil
}

// checkRevivedUnderLocks locks the gates of the revived tasks' pools and
// tenants and checks that each still fits; errGatesMoved when one does not
// (see Retry).
func checkRevivedUnderLocks(tx Tx, items []*store.RetryItem, moved []Moved) error {
	capacity := make(map[string]int, len(items))
	for _, it := range items {
		capacity[it.TaskID] = it.PoolCapacity
	}
	var pools []dockettype.Pool
	var tenants []string
	for _, m := range moved {
		pools = append(pools, m.Queue.Pool())
		tenants = append(tenants, m.Tenant)
	}
	locked, err := tx.LockGates(sortedUnique(pools), sortedUnique(tenants))
	if err != nil {
		return err
	}
	for _, m := range moved {
		it := &store.AdmitItem{Pool: m.Queue.Pool(), Tenant: m.Tenant, PoolCapacity: capacity[m.TaskID]}
		if o := take(locked, it); o == store.QueueFull || o == store.TenantQuotaExceeded {
			return errGatesMoved
		}
	}
	return nil
}
