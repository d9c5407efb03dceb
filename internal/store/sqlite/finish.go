package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// Finish applies a batch of attempt outcomes, each fenced by its lease.
func (s *Store) Finish(ctx context.Context, p *store.FinishParams) ([]store.FinishResult, error) {
	var out []store.FinishResult
	err := s.write(ctx, "finish", func(tx *wtx) error {
		out = make([]store.FinishResult, len(p.Items))
		t := newTxn(ctx, tx, p.Now)
		for i, it := range p.Items {
			r, err := t.finishOne(it)
			if err != nil {
				return err
			}
			out[i] = r
		}
		return t.flush()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (t *txn) finishOne(it store.FinishItem) (store.FinishResult, error) {
	var (
		state  dockettype.State
		query  string
		args   []any
		code   = string(it.Code)
		result any
	)
	switch it.Kind {
	case store.FinishSucceed:
		state, code = dockettype.StateSucceeded, ""
		if it.Result != nil {
			result = it.Result
		}
	case store.FinishFail:
		state = dockettype.StateFailed
	case store.FinishRetry:
		state = dockettype.StateQueued
	case store.FinishRelease:
		return t.releaseLease(it)
	default:
		return store.FinishResult{}, fmt.Errorf("finish: kind %d: %w", it.Kind, store.ErrInvalid)
	}
	if state == dockettype.StateQueued {
		query = `UPDATE tasks SET state = 'queued', error_code = ?, run_after = ?,
			lease_owner = NULL, lease_expires_at = NULL
			WHERE id = ? AND lease_epoch = ? AND state = 'running' RETURNING tenant, pool`
		args = []any{code, ms(it.RunAfter), it.TaskID, it.Epoch}
	} else {
		query = `UPDATE tasks SET state = ?, result = ?, error_code = ?, finished_at = ?,
			lease_owner = NULL, lease_expires_at = NULL
			WHERE id = ? AND lease_epoch = ? AND state = 'running' RETURNING tenant, pool`
		args = []any{state, result, nullString(code), t.now, it.TaskID, it.Epoch}
	}
	var tenant string
	var pool dockettype.Pool
	err := t.tx.QueryRowContext(t.ctx, query, args...).Scan(&tenant, &pool)
	if errors.Is(err, sql.ErrNoRows) {
		cur, err := t.currentState(it.TaskID)
		return store.FinishResult{Applied: false, State: cur}, err
	}
	if err != nil {
		return store.FinishResult{}, err
	}
	t.event(it.TaskID, dockettype.StateRunning, state, it.Epoch, it.Code)
	if state.Terminal() {
		if err := t.release(it.TaskID); err != nil {
			return store.FinishResult{}, err
		}
	}
	return store.FinishResult{Applied: true, State: state}, nil
}

// releaseLease hands a running task back to the queue at once without
// charging the attempt (a node shutting down).
func (t *txn) releaseLease(it store.FinishItem) (store.FinishResult, error) {
	var tenant string
	var pool dockettype.Pool
	err := t.tx.QueryRowContext(t.ctx, `UPDATE tasks SET state = 'queued', attempt = attempt - 1, run_after = NULL,
			lease_owner = NULL, lease_expires_at = NULL
		WHERE id = ? AND lease_epoch = ? AND state = 'running' RETURNING tenant, pool`, it.TaskID, it.Epoch).Scan(&tenant, &pool)
	if errors.Is(err, sql.ErrNoRows) {
		cur, err := t.currentState(it.TaskID)
		return store.FinishResult{Applied: false, State: cur}, err
	}
	if err != nil {
		return store.FinishResult{}, err
	}
	t.event(it.TaskID, dockettype.StateRunning, dockettype.StateQueued, it.Epoch, dockettype.CodeShutdown)
	t.queueDelta(pool, tenant, 1)
	return store.FinishResult{Applied: true, State: dockettype.StateQueued}, nil
}

func (t *txn) currentState(taskID string) (dockettype.State, error) {
	var st dockettype.State
	err := t.tx.QueryRowContext(t.ctx, "SELECT state FROM tasks WHERE id = ?", taskID).Scan(&st)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return st, err
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// AppendEvidence records evidence if the lease is still current.
func (s *Store) AppendEvidence(ctx context.Context, p *store.AppendEvidenceParams) error {
	return s.write(ctx, "append_evidence", func(tx *wtx) error {
		var attempt int
		err := tx.QueryRowContext(ctx, "SELECT attempt FROM tasks WHERE id = ? AND lease_epoch = ? AND state = 'running'",
			p.Lease.TaskID, p.Lease.Epoch).Scan(&attempt)
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrStaleLease
		}
		if err != nil {
			return err
		}
		for _, it := range p.Items {
			if _, err := tx.ExecContext(ctx, `INSERT INTO evidence (task_id, attempt, epoch, kind, body, created_at)
				VALUES (?, ?, ?, ?, ?, ?)`, p.Lease.TaskID, attempt, p.Lease.Epoch, it.Kind, it.Body, ms(p.Now)); err != nil {
				return err
			}
		}
		return nil
	})
}

// Heartbeat extends each current lease and returns the refused ones.
func (s *Store) Heartbeat(ctx context.Context, p *store.HeartbeatParams) ([]store.Lease, error) {
	var refused []store.Lease
	err := s.write(ctx, "heartbeat", func(tx *wtx) error {
		refused = refused[:0]
		until := ms(p.Now.Add(p.LeaseTTL))
		for _, l := range p.Leases {
			res, err := tx.ExecContext(ctx, `UPDATE tasks SET lease_expires_at = ?
				WHERE id = ? AND lease_epoch = ? AND state = 'running'`, until, l.TaskID, l.Epoch)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 0 {
				refused = append(refused, l)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return refused, nil
}
