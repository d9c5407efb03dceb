package postgres

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

const workflowCols = "name, pool, timeout_ms, max_attempts, created_at, updated_at"

// scanWorkflow reads workflowCols, then extra.
func scanWorkflow(r pgx.Row, extra ...any) (*store.Workflow, error) {
	w := &store.Workflow{}
	var pool string
	if err := r.Scan(append([]any{&w.Name, &pool, &w.TimeoutMS, &w.MaxAttempts, &w.CreatedAt, &w.UpdatedAt}, extra...)...); err != nil {
		return nil, err
	}
	w.Pool, w.CreatedAt, w.UpdatedAt = dockettype.Pool(pool), w.CreatedAt.UTC(), w.UpdatedAt.UTC()
	return w, nil
}

// PutWorkflow creates or replaces a remote workflow.
func (b *Backend) PutWorkflow(ctx context.Context, p *store.PutWorkflowParams) (*store.Workflow, bool, error) {
	if p.Name == "" || !p.Pool.Valid() || p.TimeoutMS < 0 || p.MaxAttempts < 0 {
		return nil, false, interpretError("put_workflow", store.ErrInvalid)
	}
	var created bool
	w, err := scanWorkflow(b.pool.QueryRow(ctx, `INSERT INTO workflows AS w (`+workflowCols+`)
		VALUES ($1, $2, $3, $4, $5, $5)
		ON CONFLICT (name) DO UPDATE SET pool = excluded.pool, timeout_ms = excluded.timeout_ms,
			max_attempts = excluded.max_attempts, updated_at = excluded.updated_at
		RETURNING `+workflowCols+`, xmax = 0`, p.Name, string(p.Pool), p.TimeoutMS, p.MaxAttempts, ts(p.Now)), &created)
	if err != nil {
		return nil, false, interpretError("put_workflow", err)
	}
	return w, created, nil
}

// GetWorkflow reads one remote workflow.
func (b *Backend) GetWorkflow(ctx context.Context, name string) (*store.Workflow, error) {
	w, err := scanWorkflow(b.pool.QueryRow(ctx, "SELECT "+workflowCols+" FROM workflows WHERE name = $1", name))
	return w, interpretError("get_workflow", err)
}

// ListWorkflows reads every remote workflow, by name.
func (b *Backend) ListWorkflows(ctx context.Context) ([]*store.Workflow, error) {
	rows, err := b.pool.Query(ctx, "SELECT "+workflowCols+" FROM workflows ORDER BY name")
	if err != nil {
		return nil, interpretError("list_workflows", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*store.Workflow, error) { return scanWorkflow(r) })
	return out, interpretError("list_workflows", err)
}

// DeleteWorkflow removes a remote workflow.
func (b *Backend) DeleteWorkflow(ctx context.Context, name string) error {
	tag, err := b.pool.Exec(ctx, "DELETE FROM workflows WHERE name = $1", name)
	if err != nil {
		return interpretError("delete_workflow", err)
	}
	if tag.RowsAffected() == 0 {
		return interpretError("delete_workflow", store.ErrNotFound)
	}
	return nil
}

// LeaseKey stores candidate as the lease key unless one exists, and
// returns the one stored.
func (b *Backend) LeaseKey(ctx context.Context, candidate []byte) ([]byte, error) {
	if len(candidate) < 16 {
		return nil, interpretError("lease_key", store.ErrInvalid)
	}
	if _, err := b.pool.Exec(ctx, "INSERT INTO settings (name, value) VALUES ('lease_key', $1) ON CONFLICT (name) DO NOTHING", candidate); err != nil {
		return nil, interpretError("lease_key", err)
	}
	var key []byte
	err := b.pool.QueryRow(ctx, "SELECT value FROM settings WHERE name = 'lease_key'").Scan(&key)
	return key, interpretError("lease_key", err)
}

// UpsertWorkers writes the workers' latest sightings in one statement.
func (b *Backend) UpsertWorkers(ctx context.Context, workers []*store.Worker) error {
	if len(workers) == 0 {
		return nil
	}
	n := len(workers)
	var (
		keyIDs, ids, tenants, flows, sdks = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		all                               = make([]bool, n)
		slots, leases                     = make([]int32, n), make([]int32, n)
		seen                              = make([]time.Time, n)
	)
	for i, w := range workers { // in the engine's (key) order
		names, err := json.Marshal(w.Workflows)
		if err != nil {
			return interpretError("upsert_workers", store.ErrInvalid)
		}
		keyIDs[i], ids[i], tenants[i], flows[i], sdks[i] = w.KeyID, w.ID, w.Tenant, string(names), w.SDK
		all[i], slots[i], leases[i], seen[i] = w.AllTenants, int32(w.Slots), int32(w.Leases), ts(w.LastSeenAt)
	}
	_, err := b.pool.Exec(ctx, `INSERT INTO workers AS w (key_id, id, tenant, all_tenants, workflows, slots, leases, sdk, last_seen_at)
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bool[], $5::text[], $6::int[], $7::int[], $8::text[], $9::timestamptz[])
		ON CONFLICT (key_id, id) DO UPDATE SET tenant = excluded.tenant, all_tenants = excluded.all_tenants,
			workflows = excluded.workflows, slots = excluded.slots, leases = excluded.leases, sdk = excluded.sdk,
			last_seen_at = GREATEST(w.last_seen_at, excluded.last_seen_at)`,
		keyIDs, ids, tenants, all, flows, slots, leases, sdks, seen)
	return interpretError("upsert_workers", err)
}

// ListWorkers reads the workers seen since the time, latest first.
func (b *Backend) ListWorkers(ctx context.Context, since time.Time) ([]*store.Worker, error) {
	rows, err := b.pool.Query(ctx, `SELECT key_id, id, tenant, all_tenants, workflows, slots, leases, sdk, last_seen_at
		FROM workers WHERE last_seen_at >= $1 ORDER BY last_seen_at DESC, key_id, id LIMIT 10000`, ts(since))
	if err != nil {
		return nil, interpretError("list_workers", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*store.Worker, error) {
		w := &store.Worker{}
		var flows string
		if err := r.Scan(&w.KeyID, &w.ID, &w.Tenant, &w.AllTenants, &flows, &w.Slots, &w.Leases, &w.SDK, &w.LastSeenAt); err != nil {
			return nil, err
		}
		w.LastSeenAt = w.LastSeenAt.UTC()
		return w, json.Unmarshal([]byte(flows), &w.Workflows)
	})
	return out, interpretError("list_workers", err)
}

// DeleteWorkersBefore forgets workers not seen since the time.
func (b *Backend) DeleteWorkersBefore(ctx context.Context, before time.Time) (int, error) {
	tag, err := b.pool.Exec(ctx, "DELETE FROM workers WHERE last_seen_at < $1", ts(before))
	if err != nil {
		return 0, interpretError("delete_workers", err)
	}
	return int(tag.RowsAffected()), nil
}
