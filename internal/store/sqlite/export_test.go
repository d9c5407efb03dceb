package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/docket-dev/docket/dockettype"
)

// SeedTasks bulk-inserts n tasks of one tenant for benchmarks, keeping the
// counters consistent. state is "queued" (ready), "succeeded", or "running"
// (lease expired at leaseExpiry). deadline applies to every row.
func SeedTasks(ctx context.Context, s *Store, tenant, pool, state string, n int, now, leaseExpiry, deadline time.Time) error {
	if err := seedTasks(ctx, s, tenant, pool, state, n, now, leaseExpiry, deadline); err != nil {
		return err
	}
	// Fold the seed's WAL into the database now, so that benchmarks do not
	// time a checkpoint of hundreds of megabytes.
	_, err := s.w.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)")
	return err
}

func seedTasks(ctx context.Context, s *Store, tenant, pool, state string, n int, now, leaseExpiry, deadline time.Time) error {
	return s.write(ctx, "seed", func(tx *wtx) error {
		if _, err := tx.ExecContext(ctx, "INSERT INTO tenants (id, created_at) VALUES (?, ?) ON CONFLICT DO NOTHING", tenant, ms(now)); err != nil {
			return err
		}
		var leaseCol, finished any
		if state == "running" {
			leaseCol = ms(leaseExpiry)
		}
		if state == "succeeded" {
			finished = ms(now)
		}
		// Random-looking but ordered IDs: a prefix per seed call plus a counter.
		prefix := fmt.Sprintf("%013x-%s-", now.UnixNano()/1000, tenant)
		_, err := tx.ExecContext(ctx, `WITH RECURSIVE seq(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM seq WHERE i < ?)
			INSERT INTO tasks (id, tenant, author, workflow, pool, state, priority, attempt, max_attempts, lease_epoch,
				lease_owner, lease_expires_at, deadline_at, created_at, finished_at, trace_id, config_version)
			SELECT ? || printf('%010d', i), ?, 'bench', 'demo.echo', ?, ?, 0, CASE WHEN ? = 'queued' THEN 0 ELSE 1 END, 3,
				CASE WHEN ? = 'queued' THEN 0 ELSE 1 END, CASE WHEN ? = 'running' THEN 'dead' END, ?, ?, ?, ?, 't', '' FROM seq`,
			n, prefix, tenant, pool, state, state, state, state, leaseCol, ms(deadline), ms(now), finished)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO task_inputs (task_id, input) SELECT id, '{}' FROM tasks WHERE id >= ? AND id < ?`,
			prefix, prefix+"~"); err != nil {
			return err
		}
		if state == "succeeded" {
			return nil
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO reservations (task_id, tenant, pool, created_at)
			SELECT id, tenant, pool, created_at FROM tasks WHERE id >= ? AND id < ?`, prefix, prefix+"~"); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "UPDATE tenants SET in_flight = in_flight + ? WHERE id = ?", n, tenant); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "UPDATE pools SET in_flight = in_flight + ? WHERE name = ?", n, pool); err != nil {
			return err
		}
		if state == "queued" {
			t := newTxn(ctx, tx, now)
			if err := t.addQueued(dockettype.Pool(pool), tenant, n); err != nil {
				return err
			}
		}
		return nil
	})
}
