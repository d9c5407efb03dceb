package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// FindExpiredLeases scans the lease-expiry index; it takes no locks.
func (s *Store) FindExpiredLeases(ctx context.Context, p *store.FindExpiredLeasesParams) ([]store.ExpiredLease, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, lease_epoch, tenant, pool, attempt, max_attempts FROM tasks
		WHERE state = 'running' AND lease_expires_at <= $1 ORDER BY lease_expires_at LIMIT $2`, ts(p.Now), p.Limit)
	if err != nil {
		return nil, interpretError("find_expired_leases", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.ExpiredLease, error) {
		var e store.ExpiredLease
		var pool string
		err := r.Scan(&e.TaskID, &e.Epoch, &e.Tenant, &pool, &e.Attempt, &e.MaxAttempts)
		e.Pool = dockettype.Pool(pool)
		return e, err
	})
	return out, interpretError("find_expired_leases", err)
}

// RecoverLeases requeues (or fails, when attempts are exhausted) each task
// whose lease is still the expired one.
func (s *Store) RecoverLeases(ctx context.Context, p *store.RecoverLeasesParams) (store.RecoverResult, error) {
	ids := make([]string, len(p.Items))
	for i, it := range p.Items {
		ids[i] = it.TaskID
	}
	var res store.RecoverResult
	err := s.write(ctx, "recover_leases", func(tx pgx.Tx) error {
		res = store.RecoverResult{}
		t := newTxn(ctx, tx, p.Now)
		if err := lockTasks(ctx, tx, ids); err != nil {
			return err
		}
		for _, it := range p.Items {
			var (
				state, tenant, pool string
				epoch               int64
			)
			err := tx.QueryRow(ctx, `UPDATE tasks SET
					state = CASE WHEN attempt >= max_attempts THEN 'failed' ELSE 'queued' END,
					error_code = CASE WHEN attempt >= max_attempts THEN 'lease_lost' ELSE error_code END,
					finished_at = CASE WHEN attempt >= max_attempts THEN $1 ELSE NULL END,
					run_after = NULL, lease_epoch = lease_epoch + 1, lease_owner = NULL, lease_expires_at = NULL
				WHERE id = $2 AND lease_epoch = $3 AND state = 'running' AND lease_expires_at <= $1
				RETURNING state, tenant, pool, lease_epoch`, t.now, it.TaskID, it.Epoch).Scan(&state, &tenant, &pool, &epoch)
			if errors.Is(err, pgx.ErrNoRows) {
				res.Skipped++
				continue
			}
			if err != nil {
				return err
			}
			res.Recovered = append(res.Recovered, it.Lease)
			t.event(it.TaskID, dockettype.StateRunning, dockettype.State(state), epoch, dockettype.CodeLeaseLost)
			if dockettype.State(state) == dockettype.StateFailed {
				res.Failed++
				if err := t.release(it.TaskID); err != nil {
					return err
				}
				continue
			}
			res.Requeued++
			t.queueDelta(dockettype.Pool(pool), tenant, 1)
		}
		return t.flush()
	})
	return res, err
}

// FindOverdue scans the deadline index; it takes no locks.
func (s *Store) FindOverdue(ctx context.Context, p *store.FindOverdueParams) ([]store.OverdueTask, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, lease_epoch, tenant, pool, state FROM tasks
		WHERE state IN ('queued', 'running') AND deadline_at <= $1 ORDER BY deadline_at LIMIT $2`, ts(p.Now), p.Limit)
	if err != nil {
		return nil, interpretError("find_overdue", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.OverdueTask, error) {
		var o store.OverdueTask
		var pool, state string
		err := r.Scan(&o.TaskID, &o.Epoch, &o.Tenant, &pool, &state)
		o.Pool, o.State = dockettype.Pool(pool), dockettype.State(state)
		return o, err
	})
	return out, interpretError("find_overdue", err)
}

// ExpireTasks times out each task still in the scanned state and epoch.
func (s *Store) ExpireTasks(ctx context.Context, p *store.ExpireTasksParams) ([]store.OverdueTask, error) {
	ids := make([]string, len(p.Items))
	for i, it := range p.Items {
		ids[i] = it.TaskID
	}
	var out []store.OverdueTask
	err := s.write(ctx, "expire_tasks", func(tx pgx.Tx) error {
		out = nil
		t := newTxn(ctx, tx, p.Now)
		if err := lockTasks(ctx, tx, ids); err != nil {
			return err
		}
		for _, it := range p.Items {
			ok, err := t.endEarly(it.TaskID, it.State, it.Epoch, dockettype.StateTimedOut, dockettype.CodeDeadlineExceeded, true)
			if err != nil {
				return err
			}
			if ok {
				out = append(out, it)
			}
		}
		return t.flush()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// endEarly moves a queued or running task, still in state from under epoch,
// to a terminal state with epoch+1 (fencing out its worker), releases its
// reservation and fixes the ready counter if it was ready. With due, the
// task's deadline must have passed.
func (t *txn) endEarly(taskID string, from dockettype.State, epoch int64, to dockettype.State, code dockettype.Code, due bool) (bool, error) {
	var (
		tenant, pool string
		runAfter     *time.Time
	)
	err := t.tx.QueryRow(t.ctx, `UPDATE tasks SET state = $1, error_code = $2, finished_at = $3,
			lease_epoch = lease_epoch + 1, lease_owner = NULL, lease_expires_at = NULL
		WHERE id = $4 AND state = $5 AND lease_epoch = $6 AND (NOT $7 OR deadline_at <= $3)
		RETURNING tenant, pool, run_after`,
		string(to), string(code), t.now, taskID, string(from), epoch, due).Scan(&tenant, &pool, &runAfter)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	t.event(taskID, from, to, epoch+1, code)
	if from == dockettype.StateQueued && runAfter == nil {
		t.queueDelta(dockettype.Pool(pool), tenant, -1)
	}
	return true, t.release(taskID)
}

// Cancel cancels a tenant's queued or running task. The task row is locked
// before its state is read, so a claim, finish or timeout racing with the
// cancel either commits first (and the cancel sees its result) or waits.
func (s *Store) Cancel(ctx context.Context, p *store.CancelParams) (*store.CancelResult, error) {
	var out *store.CancelResult
	err := s.write(ctx, "cancel", func(tx pgx.Tx) error {
		out = nil
		t := newTxn(ctx, tx, p.Now)
		task, err := scanTask(tx.QueryRow(ctx, "SELECT "+taskCols+" FROM tasks WHERE id = $1 AND tenant = $2 FOR UPDATE",
			p.TaskID, p.Tenant))
		if err != nil {
			return err // pgx.ErrNoRows → ErrNotFound
		}
		out = &store.CancelResult{Task: task, From: task.State, Previous: store.Lease{TaskID: task.ID, Epoch: task.LeaseEpoch}}
		if task.State.Terminal() {
			return nil
		}
		ok, err := t.endEarly(task.ID, task.State, task.LeaseEpoch, dockettype.StateCancelled, dockettype.CodeCancelled, false)
		if err != nil || !ok {
			return err
		}
		if err := t.flush(); err != nil {
			return err
		}
		out.Changed = true
		out.Task, err = scanTask(tx.QueryRow(ctx, "SELECT "+taskCols+" FROM tasks WHERE id = $1", p.TaskID))
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
