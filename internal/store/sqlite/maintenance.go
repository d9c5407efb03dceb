package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// FindExpiredLeases scans the lease-expiry index on a read connection.
func (s *Store) FindExpiredLeases(ctx context.Context, p *store.FindExpiredLeasesParams) ([]store.ExpiredLease, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id, lease_epoch, tenant, pool, attempt, max_attempts FROM tasks
		WHERE state = 'running' AND lease_expires_at <= ? ORDER BY lease_expires_at LIMIT ?`, ms(p.Now), p.Limit)
	if err != nil {
		return nil, interpretError("find_expired_leases", err)
	}
	defer rows.Close()
	var out []store.ExpiredLease
	for rows.Next() {
		var e store.ExpiredLease
		if err := rows.Scan(&e.TaskID, &e.Epoch, &e.Tenant, &e.Pool, &e.Attempt, &e.MaxAttempts); err != nil {
			return nil, interpretError("find_expired_leases", err)
		}
		out = append(out, e)
	}
	return out, interpretError("find_expired_leases", rows.Err())
}

// RecoverLeases requeues (or fails, when attempts are exhausted) each task
// whose lease is still the expired one.
func (s *Store) RecoverLeases(ctx context.Context, p *store.RecoverLeasesParams) (store.RecoverResult, error) {
	var res store.RecoverResult
	err := s.write(ctx, "recover_leases", func(tx *wtx) error {
		res = store.RecoverResult{}
		t := newTxn(ctx, tx, p.Now)
		for _, it := range p.Items {
			var (
				state  dockettype.State
				tenant string
				pool   dockettype.Pool
				epoch  int64
			)
			err := tx.QueryRowContext(ctx, `UPDATE tasks SET
					state = CASE WHEN attempt >= max_attempts THEN 'failed' ELSE 'queued' END,
					error_code = CASE WHEN attempt >= max_attempts THEN 'lease_lost' ELSE error_code END,
					finished_at = CASE WHEN attempt >= max_attempts THEN ?1 ELSE NULL END,
					run_after = NULL, lease_epoch = lease_epoch + 1, lease_owner = NULL, lease_expires_at = NULL
				WHERE id = ?2 AND lease_epoch = ?3 AND state = 'running' AND lease_expires_at <= ?1
				RETURNING state, tenant, pool, lease_epoch`, t.now, it.TaskID, it.Epoch).Scan(&state, &tenant, &pool, &epoch)
			if errors.Is(err, sql.ErrNoRows) {
				res.Skipped++
				continue
			}
			if err != nil {
				return err
			}
			res.Recovered = append(res.Recovered, it.Lease)
			if state == dockettype.StateFailed {
				res.Failed++
				t.event(it.TaskID, dockettype.StateRunning, state, epoch, dockettype.CodeLeaseLost)
				if err := t.release(it.TaskID); err != nil {
					return err
				}
				continue
			}
			res.Requeued++
			t.event(it.TaskID, dockettype.StateRunning, state, epoch, dockettype.CodeLeaseLost)
			t.queueDelta(pool, tenant, 1)
		}
		return t.flush()
	})
	return res, err
}

// FindOverdue scans the deadline index on a read connection.
func (s *Store) FindOverdue(ctx context.Context, p *store.FindOverdueParams) ([]store.OverdueTask, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id, lease_epoch, tenant, pool, state FROM tasks
		WHERE state IN ('queued', 'running') AND deadline_at <= ? ORDER BY deadline_at LIMIT ?`, ms(p.Now), p.Limit)
	if err != nil {
		return nil, interpretError("find_overdue", err)
	}
	defer rows.Close()
	var out []store.OverdueTask
	for rows.Next() {
		var o store.OverdueTask
		if err := rows.Scan(&o.TaskID, &o.Epoch, &o.Tenant, &o.Pool, &o.State); err != nil {
			return nil, interpretError("find_overdue", err)
		}
		out = append(out, o)
	}
	return out, interpretError("find_overdue", rows.Err())
}

// ExpireTasks times out each task still in the scanned state and epoch.
func (s *Store) ExpireTasks(ctx context.Context, p *store.ExpireTasksParams) ([]store.OverdueTask, error) {
	var out []store.OverdueTask
	err := s.write(ctx, "expire_tasks", func(tx *wtx) error {
		out = out[:0]
		t := newTxn(ctx, tx, p.Now)
		for _, it := range p.Items {
			ok, err := t.endEarly(it.TaskID, it.State, it.Epoch, dockettype.StateTimedOut, dockettype.CodeDeadlineExceeded, "AND deadline_at <= ?", t.now)
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
// reservation and fixes the ready counter if it was ready.
func (t *txn) endEarly(taskID string, from dockettype.State, epoch int64, to dockettype.State, code dockettype.Code, extra string, extraArgs ...any) (bool, error) {
	var (
		tenant   string
		pool     dockettype.Pool
		runAfter sql.NullInt64
	)
	args := append([]any{to, code, t.now, taskID, from, epoch}, extraArgs...)
	err := t.tx.QueryRowContext(t.ctx, `UPDATE tasks SET state = ?, error_code = ?, finished_at = ?,
			lease_epoch = lease_epoch + 1, lease_owner = NULL, lease_expires_at = NULL
		WHERE id = ? AND state = ? AND lease_epoch = ? `+extra+`
		RETURNING tenant, pool, run_after`, args...).Scan(&tenant, &pool, &runAfter)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	t.event(taskID, from, to, epoch+1, code)
	if from == dockettype.StateQueued && !runAfter.Valid {
		t.queueDelta(pool, tenant, -1)
	}
	return true, t.release(taskID)
}

// Cancel cancels a tenant's queued or running task.
func (s *Store) Cancel(ctx context.Context, p *store.CancelParams) (*store.CancelResult, error) {
	var out *store.CancelResult
	err := s.write(ctx, "cancel", func(tx *wtx) error {
		t := newTxn(ctx, tx, p.Now)
		task, err := scanTask(tx.QueryRowContext(ctx, "SELECT "+taskCols+" FROM tasks WHERE id = ? AND tenant = ?", p.TaskID, p.Tenant))
		if err != nil {
			return err // sql.ErrNoRows → ErrNotFound
		}
		out = &store.CancelResult{Task: task, From: task.State, Previous: store.Lease{TaskID: task.ID, Epoch: task.LeaseEpoch}}
		if task.State.Terminal() {
			return nil
		}
		ok, err := t.endEarly(task.ID, task.State, task.LeaseEpoch, dockettype.StateCancelled, dockettype.CodeCancelled, "")
		if err != nil || !ok {
			return err
		}
		if err := t.flush(); err != nil {
			return err
		}
		out.Changed = true
		out.Task, err = scanTask(tx.QueryRowContext(ctx, "SELECT "+taskCols+" FROM tasks WHERE id = ?", p.TaskID))
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
