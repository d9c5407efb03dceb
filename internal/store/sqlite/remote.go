package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

const workflowCols = "name, pool, timeout_ms, max_attempts, created_at, updated_at"

func scanWorkflow(r scanner) (*store.Workflow, error) {
	w := &store.Workflow{}
	var (
		pool             string
		created, updated int64
	)
	if err := r.Scan(&w.Name, &pool, &w.TimeoutMS, &w.MaxAttempts, &created, &updated); err != nil {
		return nil, err
	}
	w.Pool, w.CreatedAt, w.UpdatedAt = dockettype.Pool(pool), fromMS(created), fromMS(updated)
	return w, nil
}

// PutWorkflow creates or replaces a remote workflow.
func (s *Backend) PutWorkflow(ctx context.Context, p *store.PutWorkflowParams) (*store.Workflow, bool, error) {
	if p.Name == "" || !p.Pool.Valid() || p.TimeoutMS < 0 || p.MaxAttempts < 0 {
		return nil, false, interpretError("put_workflow", store.ErrInvalid)
	}
	var (
		w       *store.Workflow
		created bool
	)
	err := s.write(ctx, "put_workflow", func(tx *wtx) error {
		_, err := scanWorkflow(tx.QueryRowContext(ctx, "SELECT "+workflowCols+" FROM workflows WHERE name = ?", p.Name))
		switch {
		case errors.Is(err, sql.ErrNoRows):
			created = true
		case err != nil:
			return err
		}
		w, err = scanWorkflow(tx.QueryRowContext(ctx, `INSERT INTO workflows (`+workflowCols+`) VALUES (?1, ?2, ?3, ?4, ?5, ?5)
			ON CONFLICT (name) DO UPDATE SET pool = excluded.pool, timeout_ms = excluded.timeout_ms,
				max_attempts = excluded.max_attempts, updated_at = excluded.updated_at
			RETURNING `+workflowCols, p.Name, string(p.Pool), p.TimeoutMS, p.MaxAttempts, ms(p.Now)))
		return err
	})
	if err != nil {
		return nil, false, err
	}
	return w, created, nil
}

// GetWorkflow reads one remote workflow.
func (s *Backend) GetWorkflow(ctx context.Context, name string) (*store.Workflow, error) {
	w, err := scanWorkflow(s.r.QueryRowContext(ctx, "SELECT "+workflowCols+" FROM workflows WHERE name = ?", name))
	return w, interpretError("get_workflow", err)
}

// ListWorkflows reads every remote workflow, by name.
func (s *Backend) ListWorkflows(ctx context.Context) ([]*store.Workflow, error) {
	rows, err := s.r.QueryContext(ctx, "SELECT "+workflowCols+" FROM workflows ORDER BY name")
	if err != nil {
		return nil, interpretError("list_workflows", err)
	}
	out, err := collect(rows, func(r *sql.Rows) (*store.Workflow, error) { return scanWorkflow(r) })
	return out, interpretError("list_workflows", err)
}

// DeleteWorkflow removes a remote workflow.
func (s *Backend) DeleteWorkflow(ctx context.Context, name string) error {
	return s.write(ctx, "delete_workflow", func(tx *wtx) error {
		res, err := tx.ExecContext(ctx, "DELETE FROM workflows WHERE name = ?", name)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return errors.Join(err, store.ErrNotFound)
		}
		return nil
	})
}

// LeaseKey stores candidate as the lease key unless one exists, and
// returns the one stored.
func (s *Backend) LeaseKey(ctx context.Context, candidate []byte) ([]byte, error) {
	if len(candidate) < 16 {
		return nil, interpretError("lease_key", store.ErrInvalid)
	}
	var key []byte
	err := s.write(ctx, "lease_key", func(tx *wtx) error {
		if _, err := tx.ExecContext(ctx, "INSERT INTO settings (name, value) VALUES ('lease_key', ?) ON CONFLICT (name) DO NOTHING", candidate); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, "SELECT value FROM settings WHERE name = 'lease_key'").Scan(&key)
	})
	return key, err
}

// UpsertWorkers writes the workers' latest sightings in one transaction.
func (s *Backend) UpsertWorkers(ctx context.Context, workers []*store.Worker) error {
	if len(workers) == 0 {
		return nil
	}
	return s.write(ctx, "upsert_workers", func(tx *wtx) error {
		for _, w := range workers {
			names, err := json.Marshal(w.Workflows)
			if err != nil {
				return store.ErrInvalid
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO workers (key_id, id, tenant, all_tenants, workflows, slots, leases, sdk, last_seen_at)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
				ON CONFLICT (key_id, id) DO UPDATE SET tenant = excluded.tenant, all_tenants = excluded.all_tenants,
					workflows = excluded.workflows, slots = excluded.slots, leases = excluded.leases, sdk = excluded.sdk,
					last_seen_at = max(last_seen_at, excluded.last_seen_at)`,
				w.KeyID, w.ID, w.Tenant, b2i(w.AllTenants), string(names), w.Slots, w.Leases, w.SDK, ms(w.LastSeenAt)); err != nil {
				return err
			}
		}
		return nil
	})
}

// ListWorkers reads the workers seen since the time, latest first.
func (s *Backend) ListWorkers(ctx context.Context, since time.Time) ([]*store.Worker, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT key_id, id, tenant, all_tenants, workflows, slots, leases, sdk, last_seen_at
		FROM workers WHERE last_seen_at >= ? ORDER BY last_seen_at DESC, key_id, id LIMIT 10000`, ms(since))
	if err != nil {
		return nil, interpretError("list_workers", err)
	}
	out, err := collect(rows, func(r *sql.Rows) (*store.Worker, error) {
		w := &store.Worker{}
		var (
			flows string
			seen  int64
		)
		if err := r.Scan(&w.KeyID, &w.ID, &w.Tenant, &w.AllTenants, &flows, &w.Slots, &w.Leases, &w.SDK, &seen); err != nil {
			return nil, err
		}
		w.LastSeenAt = fromMS(seen)
		return w, json.Unmarshal([]byte(flows), &w.Workflows)
	})
	return out, interpretError("list_workers", err)
}

// DeleteWorkersBefore forgets workers not seen since the time.
func (s *Backend) DeleteWorkersBefore(ctx context.Context, before time.Time) (int, error) {
	var n int64
	err := s.write(ctx, "delete_workers", func(tx *wtx) error {
		res, err := tx.ExecContext(ctx, "DELETE FROM workers WHERE last_seen_at < ?", ms(before))
		if err == nil {
			n, err = res.RowsAffected()
		}
		return err
	})
	return int(n), err
}
