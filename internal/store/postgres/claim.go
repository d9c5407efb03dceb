package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/store/fairshare"
)

// promoteBatch bounds how many due retries one claim makes ready.
const promoteBatch = 256

// Claim moves up to p.Limit ready tasks of p.Pool to running. Its reads are
// all index range scans bounded by the limit: the ready tenants (at most
// Limit of them, by virtual time) and, per chosen tenant, its first tasks.
//
// A claim first locks its pool's row, so claims of one pool are serialized
// across nodes: the stride bookkeeping (tenant virtual times, the pool's
// clock, the ready counters) is read and written by one claim at a time,
// which keeps it simple and exact. Claims of different pools do not wait for
// each other, and a claim holds the lock for a handful of short statements.
// Tasks are selected with SKIP LOCKED so a claim never waits for a task row
// that a cancel or a timeout is changing.
func (s *Store) Claim(ctx context.Context, p *store.ClaimParams) ([]*store.ClaimedTask, error) {
	if p.Limit <= 0 || !p.Pool.Valid() || p.LeaseTTL <= 0 {
		return nil, fmt.Errorf("claim: %w", store.ErrInvalid)
	}
	var out []*store.ClaimedTask
	err := s.write(ctx, "claim", func(tx pgx.Tx) error {
		out = nil
		t := newTxn(ctx, tx, p.Now)
		if _, err := tx.Exec(ctx, "SELECT 1 FROM pools WHERE name = $1 FOR UPDATE", string(p.Pool)); err != nil {
			return err
		}
		t.locked[p.Pool] = true
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
		ids, err := t.pick(p.Pool, plan)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "UPDATE pools SET vclock = GREATEST(vclock, $1) WHERE name = $2", plan.VClock, string(p.Pool)); err != nil {
			return err
		}
		if len(ids) > 0 {
			if out, err = t.lease(ids, p); err != nil {
				return err
			}
		}
		return t.flush()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// promoteDue makes delayed retries whose run_after has passed ready again.
// A due task another transaction holds (a cancel, a timeout) is skipped; a
// later claim promotes it if it is still queued.
func (t *txn) promoteDue(pool dockettype.Pool) error {
	rows, err := t.tx.Query(t.ctx, `UPDATE tasks SET run_after = NULL
		WHERE id IN (
			SELECT id FROM tasks
			WHERE pool = $1 AND state = 'queued' AND run_after IS NOT NULL AND run_after <= $2
			ORDER BY run_after LIMIT $3
			FOR UPDATE SKIP LOCKED)
		AND state = 'queued' AND run_after IS NOT NULL
		RETURNING tenant`, string(pool), t.now, promoteBatch)
	if err != nil {
		return err
	}
	tenants, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(tenants) == 0 {
		return err
	}
	for _, tenant := range tenants {
		t.queueDelta(pool, tenant, 1)
	}
	// Apply now so that readyTenants sees the promoted work.
	return t.flush()
}

// readyTenants returns at most limit tenants with ready work, lowest virtual
// time first.
func (t *txn) readyTenants(pool dockettype.Pool, limit int) ([]fairshare.Tenant, error) {
	rows, err := t.tx.Query(t.ctx, `SELECT q.tenant, q.queued, q.vtime, coalesce(tn.weight, 1)
		FROM tenant_queues q LEFT JOIN tenants tn ON tn.id = q.tenant
		WHERE q.pool = $1 AND q.queued > 0 ORDER BY q.vtime, q.tenant LIMIT $2`, string(pool), limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (fairshare.Tenant, error) {
		var ft fairshare.Tenant
		err := r.Scan(&ft.ID, &ft.Queued, &ft.VTime, &ft.Weight)
		return ft, err
	})
}

// pick locks the granted tasks of each tenant in dispatch order (priority,
// then age) and writes back the tenants' virtual times and ready counts. It
// returns the IDs in dispatch order.
func (t *txn) pick(pool dockettype.Pool, plan fairshare.Plan) ([]string, error) {
	b := &pgx.Batch{}
	for _, g := range plan.Grants {
		b.Queue(`SELECT id FROM tasks
			WHERE pool = $1 AND tenant = $2 AND state = 'queued' AND run_after IS NULL
			ORDER BY priority DESC, id LIMIT $3
			FOR UPDATE SKIP LOCKED`, string(pool), g.Tenant, g.Count)
	}
	br := t.tx.SendBatch(t.ctx, b)
	got := make([][]string, len(plan.Grants))
	for i := range plan.Grants {
		rows, err := br.Query()
		if err != nil {
			br.Close()
			return nil, err
		}
		if got[i], err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			br.Close()
			return nil, err
		}
	}
	if err := br.Close(); err != nil {
		return nil, err
	}

	var ids []string
	n := len(plan.Grants)
	tenants, vtimes := make([]string, n), make([]float64, n)
	resets, taken := make([]int32, n), make([]int32, n)
	for i, g := range plan.Grants {
		ids = append(ids, got[i]...)
		tenants[i], vtimes[i], resets[i], taken[i] = g.Tenant, g.VTime, -1, int32(len(got[i]))
		// The ready counter is a cache of the index. Fewer tasks than it
		// promised can mean that the counter drifted, or only that other
		// transactions hold some of the tasks (SKIP LOCKED): a cancel or a
		// timeout that will apply its own change to the counter, and cannot
		// commit before this claim does since it needs the pool's row lock.
		// So count the tenant's ready tasks, locked or not (bounded by the
		// counter), and trust that count.
		if len(got[i]) < g.Count && len(got[i]) < g.Queued {
			var ready int
			if err := t.tx.QueryRow(t.ctx, `SELECT count(*) FROM (SELECT 1 FROM tasks
				WHERE pool = $1 AND tenant = $2 AND state = 'queued' AND run_after IS NULL LIMIT $3) AS ready`,
				string(pool), g.Tenant, g.Queued).Scan(&ready); err != nil {
				return nil, err
			}
			if ready < g.Queued {
				resets[i] = int32(ready)
			}
		}
	}
	_, err := t.tx.Exec(t.ctx, `UPDATE tenant_queues q
		SET vtime = d.vtime,
			queued = GREATEST(CASE WHEN d.reset >= 0 THEN d.reset ELSE q.queued END - d.taken, 0)
		FROM unnest($2::text[], $3::float8[], $4::int[], $5::int[]) AS d (tenant, vtime, reset, taken)
		WHERE q.pool = $1 AND q.tenant = d.tenant`, string(pool), tenants, vtimes, resets, taken)
	return ids, err
}

// lease moves the chosen (and locked) tasks to running under a new epoch
// and loads their inputs.
func (t *txn) lease(ids []string, p *store.ClaimParams) ([]*store.ClaimedTask, error) {
	rows, err := t.tx.Query(t.ctx, `WITH claimed AS (
			UPDATE tasks SET state = 'running', attempt = attempt + 1, lease_epoch = lease_epoch + 1,
				lease_owner = $2, lease_expires_at = $3, started_at = coalesce(started_at, $4)
			WHERE id = ANY($1) AND state = 'queued'
			RETURNING `+taskCols+`
		)
		SELECT claimed.*, i.input FROM claimed JOIN task_inputs i ON i.task_id = claimed.id`,
		ids, p.Owner, ts(p.Now.Add(p.LeaseTTL)), t.now)
	if err != nil {
		return nil, err
	}
	claimed, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*store.ClaimedTask, error) {
		return scanClaimed(r)
	})
	if err != nil {
		return nil, err
	}
	byID := make(map[string]*store.ClaimedTask, len(claimed))
	for _, c := range claimed {
		byID[c.Task.ID] = c
	}
	// Keep dispatch order (RETURNING order is unspecified).
	out := make([]*store.ClaimedTask, 0, len(claimed))
	for _, id := range ids {
		if c, ok := byID[id]; ok {
			out = append(out, c)
			t.event(id, dockettype.StateQueued, dockettype.StateRunning, c.Task.LeaseEpoch, "")
		}
	}
	return out, nil
}

// scanClaimed reads a task's columns followed by its input.
func scanClaimed(r pgx.Row) (*store.ClaimedTask, error) {
	c := &store.ClaimedTask{}
	var err error
	c.Task, err = scanTask(&extraScanner{r: r, extra: []any{&c.Input}})
	return c, err
}

// extraScanner appends destinations to a row scan, so that scanTask can read
// a row that carries more columns than a task.
type extraScanner struct {
	r     pgx.Row
	extra []any
}

func (e *extraScanner) Scan(dest ...any) error { return e.r.Scan(append(dest, e.extra...)...) }
