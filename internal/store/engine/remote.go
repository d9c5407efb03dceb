package engine

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/docket-dev/docket/internal/store"
)

const workflowCols = "name, pool, timeout_ms, max_attempts, created_at, updated_at"

func scanWorkflow(r Row) (*store.Workflow, error) {
	w := &store.Workflow{}
	return w, r.Scan(&w.Name, &w.Pool, &w.TimeoutMS, &w.MaxAttempts, At(&w.CreatedAt), At(&w.UpdatedAt))
}

// PutWorkflow creates or replaces a remote workflow. The insert that skips
// an existing name tells which it did, also when two nodes put the same
// new name at once (the second waits for the first and updates).
func (s *Store) PutWorkflow(ctx context.Context, p *store.PutWorkflowParams) (*store.Workflow, bool, error) {
	if p.Name == "" || !p.Pool.Valid() || p.TimeoutMS < 0 || p.MaxAttempts < 0 {
		return nil, false, store.Named("put_workflow", store.ErrInvalid)
	}
	var created bool
	w, err := update(ctx, s.b, "put_workflow", func(q Querier) (*store.Workflow, error) {
		args := []any{p.Name, string(p.Pool), p.TimeoutMS, p.MaxAttempts, ts(p.Now)}
		ws, err := all(q, scanWorkflow, `INSERT INTO workflows (`+workflowCols+`) VALUES ($1, $2, $3, $4, $5, $5)
			ON CONFLICT (name) DO NOTHING RETURNING `+workflowCols, args...)
		if created = len(ws) == 1; created || err != nil {
			return first(ws), err
		}
		return one(q, scanWorkflow, `UPDATE workflows SET pool = $2, timeout_ms = $3, max_attempts = $4, updated_at = $5
			WHERE name = $1 RETURNING `+workflowCols, args...)
	})
	if err != nil {
		return nil, false, err
	}
	return w, created, nil
}

func first[T any](v []T) T {
	var zero T
	if len(v) == 0 {
		return zero
	}
	return v[0]
}

// GetWorkflow reads one remote workflow.
func (s *Store) GetWorkflow(ctx context.Context, name string) (*store.Workflow, error) {
	return read(ctx, s.b, "get_workflow", func(q Querier) (*store.Workflow, error) {
		return one(q, scanWorkflow, "SELECT "+workflowCols+" FROM workflows WHERE name = $1", name)
	})
}

// ListWorkflows reads every remote workflow, by name.
func (s *Store) ListWorkflows(ctx context.Context) ([]*store.Workflow, error) {
	return read(ctx, s.b, "list_workflows", func(q Querier) ([]*store.Workflow, error) {
		return all(q, scanWorkflow, "SELECT "+workflowCols+" FROM workflows ORDER BY name")
	})
}

// DeleteWorkflow removes a remote workflow.
func (s *Store) DeleteWorkflow(ctx context.Context, name string) error {
	_, err := update(ctx, s.b, "delete_workflow", func(q Querier) (int64, error) {
		n, err := q.Exec("DELETE FROM workflows WHERE name = $1", name)
		if err == nil && n == 0 {
			err = store.ErrNotFound
		}
		return n, err
	})
	return err
}

// LeaseKey stores candidate as the lease key unless one exists, and
// returns the one stored.
func (s *Store) LeaseKey(ctx context.Context, candidate []byte) ([]byte, error) {
	if len(candidate) < 16 {
		return nil, store.Named("lease_key", store.ErrInvalid)
	}
	return update(ctx, s.b, "lease_key", func(q Querier) ([]byte, error) {
		if _, err := q.Exec("INSERT INTO settings (name, value) VALUES ('lease_key', $1) ON CONFLICT (name) DO NOTHING", candidate); err != nil {
			return nil, err
		}
		var key []byte
		_, err := one(q, scanInto(&key), "SELECT value FROM settings WHERE name = 'lease_key'")
		return key, err
	})
}

// workerRow is a worker as Dialect.UpsertWorkers reads it from its JSON
// argument: times in milliseconds since the epoch, the workflows' names as
// the JSON text the table keeps.
type workerRow struct {
	KeyID      string `json:"key_id"`
	ID         string `json:"id"`
	Tenant     string `json:"tenant"`
	AllTenants bool   `json:"all_tenants"`
	Workflows  string `json:"workflows"`
	Slots      int    `json:"slots"`
	Leases     int    `json:"leases"`
	SDK        string `json:"sdk"`
	LastSeenAt int64  `json:"last_seen_at"`
}

// UpsertWorkers writes the workers' latest sightings in one statement, in
// key order (key ID, then worker ID), so that two nodes flushing
// overlapping sets lock the rows in the same order.
func (s *Store) UpsertWorkers(ctx context.Context, workers []*store.Worker) error {
	if len(workers) == 0 {
		return nil
	}
	rows := make([]workerRow, len(workers))
	for i, w := range workers {
		names, err := json.Marshal(w.Workflows)
		if err != nil {
			return store.Named("upsert_workers", store.ErrInvalid)
		}
		rows[i] = workerRow{KeyID: w.KeyID, ID: w.ID, Tenant: w.Tenant, AllTenants: w.AllTenants, Workflows: string(names),
			Slots: w.Slots, Leases: w.Leases, SDK: w.SDK, LastSeenAt: w.LastSeenAt.UnixMilli()}
	}
	slices.SortFunc(rows, func(a, b workerRow) int { return cmp.Or(cmp.Compare(a.KeyID, b.KeyID), cmp.Compare(a.ID, b.ID)) })
	arg, err := json.Marshal(rows)
	if err != nil {
		return store.Named("upsert_workers", store.ErrInvalid)
	}
	_, err = update(ctx, s.b, "upsert_workers", func(q Querier) (int64, error) {
		return q.Exec(s.b.Dialect().UpsertWorkers, string(arg))
	})
	return err
}

// ListWorkers reads the workers seen since the time, latest first.
func (s *Store) ListWorkers(ctx context.Context, since time.Time) ([]*store.Worker, error) {
	return read(ctx, s.b, "list_workers", func(q Querier) ([]*store.Worker, error) {
		return all(q, func(r Row) (*store.Worker, error) {
			w := &store.Worker{}
			var flows string
			if err := r.Scan(&w.KeyID, &w.ID, &w.Tenant, &w.AllTenants, &flows, &w.Slots, &w.Leases, &w.SDK, At(&w.LastSeenAt)); err != nil {
				return nil, err
			}
			return w, json.Unmarshal([]byte(flows), &w.Workflows)
		}, `SELECT key_id, id, tenant, all_tenants, workflows, slots, leases, sdk, last_seen_at
			FROM workers WHERE last_seen_at >= $1 ORDER BY last_seen_at DESC, key_id, id LIMIT 10000`, ts(since))
	})
}

// DeleteWorkersBefore forgets workers not seen since the time.
func (s *Store) DeleteWorkersBefore(ctx context.Context, before time.Time) (int, error) {
	n, err := update(ctx, s.b, "delete_workers", func(q Querier) (int64, error) {
		return q.Exec("DELETE FROM workers WHERE last_seen_at < $1", ts(before))
	})
	return int(n), err
}
