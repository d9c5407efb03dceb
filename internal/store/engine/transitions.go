package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
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
		state, epoch, live, err := lockTask(tx, p.Tenant, p.TaskID)
		if err != nil {
			return err
		}
		res := &store.CancelResult{From: state, Previous: store.Lease{TaskID: p.TaskID, Epoch: epoch}}
		if live {
			moved, err := tx.End([]End{{TaskID: p.TaskID, Epoch: epoch, From: state, To: dockettype.StateCancelled,
				BumpEpoch: true, Code: dockettype.CodeCancelled, Message: "cancelled by a client"}}, p.Now)
			if err != nil {
				return err
			}
			if len(moved) != 1 {
				return fmt.Errorf("cancel: locked task changed: %w", store.ErrUnavailable)
			}
			c := newChanges()
			c.ended(moved[0], dockettype.StateCancelled, dockettype.CodeCancelled)
			if err := settleDependents(tx, c, endedOf(moved, func(Moved) dockettype.State { return dockettype.StateCancelled }), p.Now); err != nil {
				return err
			}
			if err := c.flush(tx, p.Now); err != nil {
				return err
			}
			res.Changed = true
		}
		tasks, err := tx.ReadTasks([]string{p.TaskID})
		if err != nil {
			return err
		}
		if res.Task = tasks[p.TaskID]; res.Task == nil {
			return fmt.Errorf("cancel: %w", store.ErrNotFound)
		}
		if !live {
			res.From = res.Task.State
			res.Previous.Epoch = res.Task.LeaseEpoch
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
// see store.Canceller. The tasks are locked in ID order, and the counters,
// dependents and key slots of all of them are settled once.
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
	order := make([]int, len(p.Items))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(p.Items[a].TaskID, p.Items[b].TaskID) })
	var out []store.CancelBatchResult
	err := s.b.Write(ctx, "cancel_batch", func(tx Tx) error {
		out = make([]store.CancelBatchResult, len(p.Items))
		var ends []End
		at := map[string]int{} // a live task's item
		for _, i := range order {
			it := p.Items[i]
			state, epoch, live, err := lockTask(tx, it.Tenant, it.TaskID)
			switch {
			case errors.Is(err, store.ErrNotFound):
				out[i].NotFound = true
				continue
			case err != nil:
				return err
			}
			out[i] = store.CancelBatchResult{From: state}
			if live {
				at[it.TaskID] = i
				out[i].Previous = store.Lease{TaskID: it.TaskID, Epoch: epoch}
				ends = append(ends, End{TaskID: it.TaskID, Epoch: epoch, From: state, To: dockettype.StateCancelled,
					BumpEpoch: true, Code: dockettype.CodeCancelled, Message: "cancelled by a client"})
			}
		}
		if len(ends) == 0 {
			return nil
		}
		moved, err := tx.End(ends, p.Now)
		if err != nil {
			return err
		}
		if len(moved) != len(ends) {
			return fmt.Errorf("cancel_batch: locked tasks changed: %w", store.ErrUnavailable)
		}
		c := newChanges()
		for _, m := range moved {
			c.ended(m, dockettype.StateCancelled, dockettype.CodeCancelled)
			i := at[m.TaskID]
			out[i].Changed, out[i].Pool = true, m.Queue.Pool()
		}
		if err := settleDependents(tx, c, endedOf(moved, func(Moved) dockettype.State { return dockettype.StateCancelled }), p.Now); err != nil {
			return err
		}
		return c.flush(tx, p.Now)
	})
	if err != nil {
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

// lockTask locks a tenant's task for a cancel and reports its state and
// epoch: a live task is locked (live true); a terminal one needs no lock,
// its result row never changes; a task the tenant does not have is
// store.ErrNotFound.
func lockTask(tx Tx, tenant, id string) (state dockettype.State, epoch int64, live bool, err error) {
	if state, epoch, ok, err := tx.LockLiveTask(tenant, id); err != nil || ok {
		return state, epoch, ok, err
	}
	state, epoch, ok, err := tx.FinishedTask(tenant, id)
	if err == nil && !ok {
		err = store.ErrNotFound
	}
	return state, epoch, false, err
}
