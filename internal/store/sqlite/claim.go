package sqlite

import (
	"context"
	"fmt"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/store/fairshare"
)

// promoteBatch bounds how many due retries one claim makes ready.
const promoteBatch = 256

// Claim moves up to p.Limit ready tasks of p.Pool to running. Its reads are
// all index range scans bounded by the limit: the ready tenants (at most
// Limit of them, by virtual time) and, per chosen tenant, its first tasks.
func (s *Store) Claim(ctx context.Context, p *store.ClaimParams) ([]*store.ClaimedTask, error) {
	if p.Limit <= 0 || !p.Pool.Valid() || p.LeaseTTL <= 0 {
		return nil, fmt.Errorf("claim: %w", store.ErrInvalid)
	}
	var out []*store.ClaimedTask
	err := s.write(ctx, "claim", func(tx *wtx) error {
		t := newTxn(ctx, tx, p.Now)
		if err := t.promoteDue(p.Pool); err != nil {
			return err
		}
		tenants, err := t.readyTenants(p.Pool, p.Limit)
		if err != nil {
			return err
		}
		if len(tenants) == 0 {
			return nil
		}
		plan := fairshare.Allocate(tenants, p.Limit)
		var ids []string
		for _, a := range plan.Grants {
			got, err := t.tenantReady(p.Pool, a.Tenant, a.Count)
			if err != nil {
				return err
			}
			ids = append(ids, got...)
			// One statement per tenant: its new virtual time and ready
			// count. The count is a cache of the index; if the index held
			// fewer tasks than it promised (with one writer nothing else can
			// hold them), the tenant has none left.
			drained := len(got) < a.Count && len(got) < a.Queued
			if _, err := tx.ExecContext(ctx, `UPDATE tenant_queues SET vtime = ?,
				queued = CASE WHEN ? THEN 0 ELSE max(queued - ?, 0) END
				WHERE pool = ? AND tenant = ?`, a.VTime, drained, len(got), p.Pool, a.Tenant); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, "UPDATE pools SET vclock = max(vclock, ?) WHERE name = ?", plan.VClock, p.Pool); err != nil {
			return err
		}
		if len(ids) == 0 {
			return t.flush()
		}
		out, err = t.lease(ids, p)
		if err != nil {
			return err
		}
		return t.flush()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// promoteDue makes delayed retries whose run_after has passed ready again.
func (t *txn) promoteDue(pool dockettype.Pool) error {
	rows, err := t.tx.QueryContext(t.ctx, `SELECT id, tenant FROM tasks
		WHERE pool = ? AND state = 'queued' AND run_after IS NOT NULL AND run_after <= ?
		ORDER BY run_after LIMIT ?`, pool, t.now, promoteBatch)
	if err != nil {
		return err
	}
	var ids []any
	var tenants []string
	for rows.Next() {
		var id, tenant string
		if err := rows.Scan(&id, &tenant); err != nil {
			rows.Close()
			return err
		}
		ids = append(ids, id)
		tenants = append(tenants, tenant)
	}
	if err := rows.Close(); err != nil {
		return err
	}
	if len(ids) == 0 {
		return nil
	}
	if _, err := t.tx.ExecContext(t.ctx, "UPDATE tasks SET run_after = NULL WHERE id IN ("+placeholders(len(ids))+")", ids...); err != nil {
		return err
	}
	for _, tenant := range tenants {
		t.queueDelta(pool, tenant, 1)
	}
	// Apply now so that readyTenants sees the promoted work.
	for k, d := range t.queues {
		if err := t.addQueued(k.pool, k.tenant, d); err != nil {
			return err
		}
		delete(t.queues, k)
	}
	return nil
}

// readyTenants returns at most limit tenants with ready work, lowest virtual
// time first.
func (t *txn) readyTenants(pool dockettype.Pool, limit int) ([]fairshare.Tenant, error) {
	rows, err := t.tx.QueryContext(t.ctx, `SELECT q.tenant, q.queued, q.vtime, coalesce(tn.weight, 1)
		FROM tenant_queues q LEFT JOIN tenants tn ON tn.id = q.tenant
		WHERE q.pool = ? AND q.queued > 0 ORDER BY q.vtime, q.tenant LIMIT ?`, pool, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []fairshare.Tenant
	for rows.Next() {
		var ft fairshare.Tenant
		if err := rows.Scan(&ft.ID, &ft.Queued, &ft.VTime, &ft.Weight); err != nil {
			return nil, err
		}
		out = append(out, ft)
	}
	return out, rows.Err()
}

// tenantReady returns the IDs of up to n ready tasks of a tenant in
// dispatch order: priority, then age.
func (t *txn) tenantReady(pool dockettype.Pool, tenant string, n int) ([]string, error) {
	rows, err := t.tx.QueryContext(t.ctx, `SELECT id FROM tasks
		WHERE pool = ? AND tenant = ? AND state = 'queued' AND run_after IS NULL
		ORDER BY priority DESC, id LIMIT ?`, pool, tenant, n)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// lease moves the chosen tasks to running under a new epoch and loads their
// inputs.
func (t *txn) lease(ids []string, p *store.ClaimParams) ([]*store.ClaimedTask, error) {
	args := []any{p.Owner, ms(p.Now.Add(p.LeaseTTL)), t.now}
	for _, id := range ids {
		args = append(args, id)
	}
	rows, err := t.tx.QueryContext(t.ctx, `UPDATE tasks SET state = 'running', attempt = attempt + 1,
		lease_epoch = lease_epoch + 1, lease_owner = ?, lease_expires_at = ?, started_at = coalesce(started_at, ?)
		WHERE id IN (`+placeholders(len(ids))+`) AND state = 'queued' RETURNING `+taskCols, args...)
	if err != nil {
		return nil, err
	}
	tasks, err := scanTasks(rows)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]*store.ClaimedTask, len(tasks))
	out := make([]*store.ClaimedTask, 0, len(tasks))
	idArgs := make([]any, 0, len(tasks))
	for _, task := range tasks {
		c := &store.ClaimedTask{Task: task}
		byID[task.ID] = c
		idArgs = append(idArgs, task.ID)
		t.event(task.ID, dockettype.StateQueued, dockettype.StateRunning, task.LeaseEpoch, "")
	}
	// Keep dispatch order (RETURNING order is unspecified).
	for _, id := range ids {
		if c, ok := byID[id]; ok {
			out = append(out, c)
		}
	}
	in, err := t.tx.QueryContext(t.ctx, "SELECT task_id, input FROM task_inputs WHERE task_id IN ("+placeholders(len(idArgs))+")", idArgs...)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	for in.Next() {
		var id string
		var input []byte
		if err := in.Scan(&id, &input); err != nil {
			return nil, err
		}
		if c, ok := byID[id]; ok {
			c.Input = input
		}
	}
	return out, in.Err()
}
