package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// Admit runs a batch of admissions in one transaction.
func (s *Store) Admit(ctx context.Context, p *store.AdmitParams) ([]store.AdmitResult, error) {
	var out []store.AdmitResult
	err := s.write(ctx, "admit", func(tx *wtx) error {
		out = make([]store.AdmitResult, 0, len(p.Items))
		t := newTxn(ctx, tx, p.Now)
		for _, it := range p.Items {
			res, err := t.admitOne(it)
			if err != nil {
				return err
			}
			out = append(out, res)
		}
		return t.flush()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (t *txn) admitOne(it *store.AdmitItem) (store.AdmitResult, error) {
	if it.TaskID == "" || it.Tenant == "" || it.IdempotencyKey == "" || !it.Pool.Valid() || it.MaxAttempts < 1 {
		return store.AdmitResult{}, fmt.Errorf("admit: %w", store.ErrInvalid)
	}
	// Idempotency: an existing binding decides the answer.
	var hash, taskID string
	err := t.tx.QueryRowContext(t.ctx, "SELECT request_hash, task_id FROM idempotency_keys WHERE tenant = ? AND key = ?",
		it.Tenant, it.IdempotencyKey).Scan(&hash, &taskID)
	switch {
	case err == nil:
		if hash != it.RequestHash {
			return store.AdmitResult{Outcome: store.IdempotencyConflict}, nil
		}
		task, err := scanTask(t.tx.QueryRowContext(t.ctx, "SELECT "+taskCols+" FROM tasks WHERE id = ?", taskID))
		if err != nil {
			return store.AdmitResult{}, err
		}
		return store.AdmitResult{Outcome: store.Replayed, Task: task}, nil
	case !errors.Is(err, sql.ErrNoRows):
		return store.AdmitResult{}, err
	}

	// Global capacity of the pool, then the tenant's limit; both counters
	// are checked and taken in this transaction.
	res, err := t.tx.ExecContext(t.ctx, "UPDATE pools SET in_flight = in_flight + 1 WHERE name = ? AND (? <= 0 OR in_flight < ?)",
		it.Pool, it.PoolCapacity, it.PoolCapacity)
	if err != nil {
		return store.AdmitResult{}, err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return store.AdmitResult{Outcome: store.QueueFull}, nil
	}
	ok, err := t.takeTenantSlot(it.Tenant)
	if err != nil {
		return store.AdmitResult{}, err
	}
	if !ok {
		if _, err := t.tx.ExecContext(t.ctx, "UPDATE pools SET in_flight = in_flight - 1 WHERE name = ?", it.Pool); err != nil {
			return store.AdmitResult{}, err
		}
		return store.AdmitResult{Outcome: store.TenantQuotaExceeded}, nil
	}

	input := it.Input
	if input == nil {
		input = []byte("null")
	}
	task, err := scanTask(t.tx.QueryRowContext(t.ctx, `INSERT INTO tasks (id, tenant, author, workflow, pool, state,
		priority, max_attempts, deadline_at, created_at, trace_id, config_version)
		VALUES (?, ?, ?, ?, ?, 'queued', ?, ?, ?, ?, ?, ?) RETURNING `+taskCols,
		it.TaskID, it.Tenant, it.Author, it.Workflow, it.Pool, it.Priority, it.MaxAttempts,
		ms(it.DeadlineAt), t.now, it.TraceID, it.ConfigVersion))
	if err != nil {
		return store.AdmitResult{}, err
	}
	if _, err := t.tx.ExecContext(t.ctx, "INSERT INTO task_inputs (task_id, input) VALUES (?, ?)", it.TaskID, input); err != nil {
		return store.AdmitResult{}, err
	}
	if _, err := t.tx.ExecContext(t.ctx, "INSERT INTO idempotency_keys (tenant, key, request_hash, task_id, created_at) VALUES (?, ?, ?, ?, ?)",
		it.Tenant, it.IdempotencyKey, it.RequestHash, it.TaskID, t.now); err != nil {
		return store.AdmitResult{}, err
	}
	if _, err := t.tx.ExecContext(t.ctx, "INSERT INTO reservations (task_id, tenant, pool, created_at) VALUES (?, ?, ?, ?)",
		it.TaskID, it.Tenant, it.Pool, t.now); err != nil {
		return store.AdmitResult{}, err
	}
	t.event(it.TaskID, "", dockettype.StateQueued, 0, "")
	t.queueDelta(it.Pool, it.Tenant, 1)
	return store.AdmitResult{Outcome: store.Admitted, Task: task}, nil
}

// takeTenantSlot takes one unit of the tenant's in-flight limit, creating
// an unlimited tenant on first use. It reports false when the limit is
// reached.
func (t *txn) takeTenantSlot(tenant string) (bool, error) {
	res, err := t.tx.ExecContext(t.ctx, `UPDATE tenants SET in_flight = in_flight + 1
		WHERE id = ? AND (max_in_flight = 0 OR in_flight < max_in_flight)`, tenant)
	if err != nil {
		return false, err
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return true, nil
	}
	res, err = t.tx.ExecContext(t.ctx, "INSERT INTO tenants (id, in_flight, created_at) VALUES (?, 1, ?) ON CONFLICT (id) DO NOTHING",
		tenant, t.now)
	if err != nil {
		return false, err
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}
