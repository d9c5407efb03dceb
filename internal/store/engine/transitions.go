package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// RecoverLeases returns each still-expired lease's task to the queue
// (epoch+1), or fails it with lease_lost when its attempts are exhausted;
// see store.Recoverer. The scanned attempt decides: it cannot have changed
// while the epoch is the same.
func (s *Store) RecoverLeases(ctx context.Context, p *store.RecoverLeasesParams) (store.RecoverResult, error) {
	var res store.RecoverResult
	err := s.b.Write(ctx, "recover_leases", func(tx Tx) error {
		res = store.RecoverResult{}
		if err := tx.LockLive(taskIDs(p.Items, func(e store.ExpiredLease) string { return e.TaskID })); err != nil {
			return err
		}
		var ends []End
		var requeues []Requeue
		seen := map[string]bool{}
		for _, it := range p.Items {
			if seen[it.TaskID] {
				res.Skipped++
				continue
			}
			seen[it.TaskID] = true
			if it.Attempt >= it.MaxAttempts {
				ends = append(ends, End{TaskID: it.TaskID, Epoch: it.Epoch, From: dockettype.StateRunning,
					To: dockettype.StateFailed, BumpEpoch: true, LeaseDue: true, Code: dockettype.CodeLeaseLost,
					Message: "the worker stopped renewing its lease on the last attempt"})
			} else {
				requeues = append(requeues, Requeue{TaskID: it.TaskID, Epoch: it.Epoch, BumpEpoch: true, LeaseDue: true,
					Code: dockettype.CodeLeaseLost, Message: "the worker stopped renewing its lease"})
			}
		}
		c := newChanges()
		scanned := map[string]store.Lease{}
		for _, it := range p.Items {
			scanned[it.TaskID] = it.Lease
		}
		if len(ends) > 0 {
			moved, err := tx.End(ends, p.Now)
			if err != nil {
				return err
			}
			for _, m := range moved {
				c.ended(m, dockettype.StateFailed, dockettype.CodeLeaseLost)
				res.Failed++
				res.Recovered = append(res.Recovered, scanned[m.TaskID])
			}
			if err := settleDependents(tx, c, endedOf(moved, func(Moved) dockettype.State { return dockettype.StateFailed }), p.Now); err != nil {
				return err
			}
		}
		if len(requeues) > 0 {
			moved, err := tx.Requeue(requeues, p.Now)
			if err != nil {
				return err
			}
			for _, m := range moved {
				c.requeued(m, dockettype.CodeLeaseLost)
				res.Requeued++
				res.Recovered = append(res.Recovered, scanned[m.TaskID])
			}
		}
		res.Skipped += len(ends) + len(requeues) - res.Failed - res.Requeued
		return c.flush(tx, p.Now)
	})
	return res, err
}

// ExpireTasks makes each task still in its scanned state and epoch, and
// past its deadline, timed_out (epoch+1); see store.DeadlineEnforcer.
func (s *Store) ExpireTasks(ctx context.Context, p *store.ExpireTasksParams) ([]store.OverdueTask, error) {
	var out []store.OverdueTask
	err := s.b.Write(ctx, "expire_tasks", func(tx Tx) error {
		out = nil
		if err := tx.LockLive(taskIDs(p.Items, func(o store.OverdueTask) string { return o.TaskID })); err != nil {
			return err
		}
		ends := make([]End, 0, len(p.Items))
		seen := map[string]bool{}
		for _, it := range p.Items {
			if seen[it.TaskID] {
				continue
			}
			seen[it.TaskID] = true
			ends = append(ends, End{TaskID: it.TaskID, Epoch: it.Epoch, From: it.State, To: dockettype.StateTimedOut,
				BumpEpoch: true, DeadlineDue: true, Code: dockettype.CodeDeadlineExceeded,
				Message: "the task did not finish before its deadline"})
		}
		moved, err := tx.End(ends, p.Now)
		if err != nil {
			return err
		}
		c := newChanges()
		changed := map[string]bool{}
		for _, m := range moved {
			c.ended(m, dockettype.StateTimedOut, dockettype.CodeDeadlineExceeded)
			changed[m.TaskID] = true
		}
		if err := settleDependents(tx, c, endedOf(moved, func(Moved) dockettype.State { return dockettype.StateTimedOut }), p.Now); err != nil {
			return err
		}
		for _, it := range p.Items {
			if changed[it.TaskID] {
				out = append(out, it)
				delete(changed, it.TaskID)
			}
		}
		return c.flush(tx, p.Now)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Cancel cancels a tenant's queued or running task (epoch+1); see
// store.Canceller. The task is locked before its state is read, so a claim,
// finish or timeout racing with the cancel either commits first (and the
// cancel sees its outcome) or waits.
func (s *Store) Cancel(ctx context.Context, p *store.CancelParams) (*store.CancelResult, error) {
	if p.Tenant == "" || p.TaskID == "" {
		return nil, invalid("cancel", "tenant and task ID are required")
	}
	var out *store.CancelResult
	err := s.b.Write(ctx, "cancel", func(tx Tx) error {
		out = nil
		found, err := cancelTasks(tx, []store.CancelItem{{Tenant: p.Tenant, TaskID: p.TaskID}}, p.Now)
		if err != nil {
			return err
		}
		o := found[0]
		if !o.found {
			return fmt.Errorf("cancel: %w", store.ErrNotFound)
		}
		res := &store.CancelResult{Changed: o.changed, From: o.from, Previous: store.Lease{TaskID: p.TaskID, Epoch: o.epoch}}
		tasks, err := tx.ReadTasks([]string{p.TaskID})
		if err != nil {
			return err
		}
		if res.Task = tasks[p.TaskID]; res.Task == nil {
			return fmt.Errorf("cancel: %w", store.ErrNotFound)
		}
		out = res
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// CancelBatch cancels each item's task as Cancel does, in one transaction;
// see store.Canceller.
func (s *Store) CancelBatch(ctx context.Context, p *store.CancelBatchParams) ([]store.CancelBatchResult, error) {
	seen := make(map[string]bool, len(p.Items))
	for _, it := range p.Items {
		if it.Tenant == "" || it.TaskID == "" {
			return nil, invalid("cancel_batch", "tenant and task ID are required")
		}
		if seen[it.TaskID] {
			return nil, invalid("cancel_batch", "a task is named twice")
		}
		seen[it.TaskID] = true
	}
	var out []store.CancelBatchResult
	err := s.b.Write(ctx, "cancel_batch", func(tx Tx) error {
		found, err := cancelTasks(tx, p.Items, p.Now)
		if err != nil {
			return err
		}
		out = make([]store.CancelBatchResult, len(found))
		for i, o := range found {
			switch {
			case !o.found:
				out[i].NotFound = true
			case o.changed:
				out[i] = store.CancelBatchResult{Changed: true, From: o.from, Pool: o.pool,
					Previous: store.Lease{TaskID: p.Items[i].TaskID, Epoch: o.epoch}}
			default:
				out[i].From = o.from
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// cancelFound is what a cancel found of one task, and did to it.
type cancelFound struct {
	found   bool             // the item's tenant has the task
	changed bool             // it was live, and is cancelled
	from    dockettype.State // its state before
	epoch   int64            // its epoch before
	pool    dockettype.Pool  // when changed
}

// cancelTasks cancels the live tasks among items, each of its item's
// tenant, and answers each item in order. The live tasks are locked in ID
// order before their states are read; a terminal one needs no lock, its
// result row never changes; another tenant's task is not found. The
// counters, dependents and key slots of all of them are settled once.
func cancelTasks(tx Tx, items []store.CancelItem, now time.Time) ([]cancelFound, error) {
	ids := make([]string, len(items))
	for i, it := range items {
		ids[i] = it.TaskID
	}
	live, err := tx.LockLiveTasks(ids)
	if err != nil {
		return nil, err
	}
	out := make([]cancelFound, len(items))
	var ends []End
	var rest []string
	at := map[string]int{} // a live task's item
	for i, it := range items {
		ts, ok := live[it.TaskID]
		if !ok {
			rest = append(rest, it.TaskID)
			continue
		}
		if ts.Tenant != it.Tenant {
			continue
		}
		out[i] = cancelFound{found: true, from: ts.State, epoch: ts.Epoch}
		at[it.TaskID] = i
		ends = append(ends, End{TaskID: it.TaskID, Epoch: ts.Epoch, From: ts.State, To: dockettype.StateCancelled,
			BumpEpoch: true, Code: dockettype.CodeCancelled, Message: "cancelled by a client"})
	}
	if len(rest) > 0 {
		done, err := tx.FinishedTasks(rest)
		if err != nil {
			return nil, err
		}
		for i, it := range items {
			if ts, ok := done[it.TaskID]; ok && ts.Tenant == it.Tenant {
				out[i] = cancelFound{found: true, from: ts.State, epoch: ts.Epoch}
			}
		}
	}
	if len(ends) == 0 {
		return out, nil
	}
	moved, err := tx.End(ends, now)
	if err != nil {
		return nil, err
	}
	if len(moved) != len(ends) {
		return nil, fmt.Errorf("cancel: locked tasks changed: %w", store.ErrUnavailable)
	}
	c := newChanges()
	for _, m := range moved {
		c.ended(m, dockettype.StateCancelled, dockettype.CodeCancelled)
		i := at[m.TaskID]
		out[i].changed, out[i].pool = true, m.Queue.Pool()
	}
	if err := settleDependents(tx, c, endedOf(moved, func(Moved) dockettype.State { return dockettype.StateCancelled }), now); err != nil {
		return nil, err
	}
	if err := c.flush(tx, now); err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteFinished deletes a bounded batch of tasks that finished before
// p.Before; see store.Cleaner.
func (s *Store) DeleteFinished(ctx context.Context, p *store.DeleteFinishedParams) (int, error) {
	if p.Limit <= 0 {
		return 0, invalid("delete_finished", "limit is required")
	}
	var n int
	err := s.b.Write(ctx, "delete_finished", func(tx Tx) error {
		ids, err := tx.FinishedBefore(p.Before, p.Limit)
		if err != nil || len(ids) == 0 {
			n = 0
			return err
		}
		n = len(ids)
		freed, err := tx.DeleteTasks(ids)
		if err != nil {
			return err
		}
		c := newChanges()
		for tenant, bytes := range freed {
			c.stored(tenant, -bytes)
		}
		return c.flush(tx, time.Time{})
	})
	return n, err
}
