package postgres

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// Admit runs a batch of admissions in one transaction.
//
// The transaction first locks the rows of the pools its items name, then
// those of its tenants that exist, each in sorted order. The pool lock is
// what makes capacity transactional: admissions to one pool run one after
// the other. Taking every lock up front in one order means that batches
// admitted by several nodes at once queue behind each other instead of
// deadlocking (PostgreSQL only breaks a deadlock after deadlock_timeout).
//
// Each item then binds its idempotency key before it takes any capacity. A
// concurrent admission of the same key waits (on the pool row, or on the
// key's unique index entry when it names another pool) until the first
// transaction ends, then sees its binding and answers Replayed or
// IdempotencyConflict, never QueueFull.
func (s *Store) Admit(ctx context.Context, p *store.AdmitParams) ([]store.AdmitResult, error) {
	pools := map[string]bool{}
	tenants := map[string]bool{}
	for _, it := range p.Items {
		if it.TaskID == "" || it.Tenant == "" || it.IdempotencyKey == "" || !it.Pool.Valid() || it.MaxAttempts < 1 {
			return nil, fmt.Errorf("admit: %w", store.ErrInvalid)
		}
		pools[string(it.Pool)] = true
		tenants[it.Tenant] = true
	}
	if len(p.Items) == 0 {
		return []store.AdmitResult{}, nil
	}
	poolNames := slices.Sorted(maps.Keys(pools))
	tenantIDs := slices.Sorted(maps.Keys(tenants))
	var out []store.AdmitResult
	err := s.write(ctx, "admit", func(tx pgx.Tx) error {
		out = make([]store.AdmitResult, 0, len(p.Items))
		t := newTxn(ctx, tx, p.Now)
		b := &pgx.Batch{}
		b.Queue("SELECT 1 FROM pools WHERE name = ANY($1) ORDER BY name FOR UPDATE", poolNames)
		b.Queue("SELECT 1 FROM tenants WHERE id = ANY($1) ORDER BY id FOR UPDATE", tenantIDs)
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		for _, name := range poolNames {
			t.locked[dockettype.Pool(name)] = true
		}
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
	// Idempotency: an existing binding decides the answer.
	if res, found, err := t.replay(it); found || err != nil {
		return res, err
	}
	tag, err := t.tx.Exec(t.ctx, `INSERT INTO idempotency_keys (tenant, key, request_hash, task_id, created_at)
		VALUES ($1, $2, $3, $4, $5) ON CONFLICT (tenant, key) DO NOTHING`,
		it.Tenant, it.IdempotencyKey, it.RequestHash, it.TaskID, t.now)
	if err != nil {
		return store.AdmitResult{}, err
	}
	if tag.RowsAffected() == 0 {
		// A transaction admitting the same key to another pool bound it
		// and committed while this one waited on the index entry: answer
		// from its binding.
		res, found, err := t.replay(it)
		if err == nil && !found {
			err = errRetry // the binding vanished: cannot happen once committed
		}
		return res, err
	}

	// Global capacity of the pool, then the tenant's limit; both counters
	// are checked and taken in this transaction. A refusal undoes what the
	// item wrote, so that it writes nothing.
	tag, err = t.tx.Exec(t.ctx, "UPDATE pools SET in_flight = in_flight + 1 WHERE name = $1 AND ($2 <= 0 OR in_flight < $2)",
		string(it.Pool), it.PoolCapacity)
	if err != nil {
		return store.AdmitResult{}, err
	}
	if tag.RowsAffected() == 0 {
		return store.AdmitResult{Outcome: store.QueueFull}, t.unbind(it)
	}
	ok, err := t.takeTenantSlot(it.Tenant)
	if err != nil {
		return store.AdmitResult{}, err
	}
	if !ok {
		if _, err := t.tx.Exec(t.ctx, "UPDATE pools SET in_flight = in_flight - 1 WHERE name = $1", string(it.Pool)); err != nil {
			return store.AdmitResult{}, err
		}
		return store.AdmitResult{Outcome: store.TenantQuotaExceeded}, t.unbind(it)
	}

	input := it.Input
	if input == nil {
		input = []byte("null")
	}
	task, err := scanTask(t.tx.QueryRow(t.ctx, `WITH task AS (
			INSERT INTO tasks (id, tenant, author, workflow, pool, state, priority, max_attempts,
				deadline_at, created_at, trace_id, config_version)
			VALUES ($1, $2, $3, $4, $5, 'queued', $6, $7, $8, $9, $10, $11)
			RETURNING `+taskCols+`
		), input AS (
			INSERT INTO task_inputs (task_id, input) VALUES ($1, $12)
		), reservation AS (
			INSERT INTO reservations (task_id, tenant, pool, created_at) VALUES ($1, $2, $5, $9)
		)
		SELECT `+taskCols+` FROM task`,
		it.TaskID, it.Tenant, it.Author, it.Workflow, string(it.Pool), it.Priority, it.MaxAttempts,
		ts(it.DeadlineAt), t.now, it.TraceID, it.ConfigVersion, input))
	if err != nil {
		return store.AdmitResult{}, err
	}
	t.event(it.TaskID, "", dockettype.StateQueued, 0, "")
	t.queueDelta(it.Pool, it.Tenant, 1)
	return store.AdmitResult{Outcome: store.Admitted, Task: task}, nil
}

// replay answers an item from the key's existing binding, if there is one.
func (t *txn) replay(it *store.AdmitItem) (store.AdmitResult, bool, error) {
	var hash, taskID string
	err := t.tx.QueryRow(t.ctx, "SELECT request_hash, task_id FROM idempotency_keys WHERE tenant = $1 AND key = $2",
		it.Tenant, it.IdempotencyKey).Scan(&hash, &taskID)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.AdmitResult{}, false, nil
	}
	if err != nil {
		return store.AdmitResult{}, false, err
	}
	if hash != it.RequestHash {
		return store.AdmitResult{Outcome: store.IdempotencyConflict}, true, nil
	}
	task, err := scanTask(t.tx.QueryRow(t.ctx, "SELECT "+taskCols+" FROM tasks WHERE id = $1", taskID))
	if err != nil {
		return store.AdmitResult{}, true, err
	}
	return store.AdmitResult{Outcome: store.Replayed, Task: task}, true, nil
}

// unbind removes the binding a refused item made. A transaction waiting on
// the key then inserts its own binding once this one commits.
func (t *txn) unbind(it *store.AdmitItem) error {
	_, err := t.tx.Exec(t.ctx, "DELETE FROM idempotency_keys WHERE tenant = $1 AND key = $2", it.Tenant, it.IdempotencyKey)
	return err
}

// takeTenantSlot takes one unit of the tenant's in-flight limit, creating
// an unlimited tenant on first use. It reports false when the limit is
// reached.
func (t *txn) takeTenantSlot(tenant string) (bool, error) {
	take := func() (bool, error) {
		tag, err := t.tx.Exec(t.ctx, `UPDATE tenants SET in_flight = in_flight + 1
			WHERE id = $1 AND (max_in_flight = 0 OR in_flight < max_in_flight)`, tenant)
		return tag.RowsAffected() == 1, err
	}
	if ok, err := take(); ok || err != nil {
		return ok, err
	}
	tag, err := t.tx.Exec(t.ctx, "INSERT INTO tenants (id, in_flight, created_at) VALUES ($1, 1, $2) ON CONFLICT (id) DO NOTHING",
		tenant, t.now)
	if err != nil || tag.RowsAffected() == 1 {
		return err == nil, err
	}
	// The tenant exists: either it is full, or another transaction created
	// it after the first UPDATE looked. This statement sees its row.
	return take()
}
