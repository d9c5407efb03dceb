package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

const bulkJobCols = `id, action, filter, actor_key, actor_role, state, matched, done, skipped, failed, task_cursor,
	version, lease_owner, lease_expires_at, created_at, updated_at, finished_at`

func scanBulkJob(r Row) (*store.BulkJob, error) {
	j := &store.BulkJob{}
	var filter, role string
	err := r.Scan(&j.ID, &j.Action, &filter, &j.By.KeyID, &role, &j.State, &j.Matched, &j.Done, &j.Skipped,
		&j.Failed, &j.Cursor, &j.Version, &j.LeaseOwner, AtOrNil(&j.LeaseExpiresAt), At(&j.CreatedAt),
		At(&j.UpdatedAt), AtOrNil(&j.FinishedAt))
	if err != nil {
		return nil, err
	}
	j.By.Role = dockettype.Role(role)
	if err := json.Unmarshal([]byte(filter), &j.Filter); err != nil {
		return nil, fmt.Errorf("bulk job %s: filter: %w", j.ID, err)
	}
	return j, nil
}

// CreateBulkJob stores a new running job.
func (s *Store) CreateBulkJob(ctx context.Context, j *store.BulkJob) error {
	switch {
	case j.ID == "":
		return invalid("create_bulk_job", "ID is required")
	case j.Action != store.BulkCancel && j.Action != store.BulkRetry && j.Action != store.BulkDelete:
		return invalid("create_bulk_job", "unknown action")
	}
	filter, err := json.Marshal(&j.Filter)
	if err != nil {
		return invalid("create_bulk_job", "filter does not encode")
	}
	_, err = update(ctx, s.b, "create_bulk_job", func(q Querier) (int64, error) {
		return q.Exec(`INSERT INTO bulk_jobs (id, action, filter, tenant, actor_key, actor_role, state, version,
				created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, 'running', 1, $7, $7)`,
			j.ID, j.Action, string(filter), j.Filter.Tenant, j.By.KeyID, string(j.By.Role), ts(j.CreatedAt))
	})
	return err
}

// GetBulkJob reads one job.
func (s *Store) GetBulkJob(ctx context.Context, id string) (*store.BulkJob, error) {
	return read(ctx, s.b, "get_bulk_job", func(q Querier) (*store.BulkJob, error) {
		return one(q, scanBulkJob, "SELECT "+bulkJobCols+" FROM bulk_jobs WHERE id = $1", id)
	})
}

// bulkLeaseFree is the condition of a running job no other node holds
// ($1 now, $2 the owner asking).
const bulkLeaseFree = "state = 'running' AND (lease_expires_at IS NULL OR lease_expires_at <= $1 OR lease_owner = $2)"

// LeaseBulkJob leases the oldest free running job: a compare-and-set on
// the lease, so that of several nodes asking at once one gets it.
func (s *Store) LeaseBulkJob(ctx context.Context, p *store.LeaseBulkJobParams) (*store.BulkJob, error) {
	if p.Owner == "" || p.TTL <= 0 {
		return nil, invalid("lease_bulk_job", "owner and TTL are required")
	}
	return update(ctx, s.b, "lease_bulk_job", func(q Querier) (*store.BulkJob, error) {
		return one(q, scanBulkJob, `UPDATE bulk_jobs SET lease_owner = $2, lease_expires_at = $3, version = version + 1,
				updated_at = $1
			WHERE id = (SELECT id FROM bulk_jobs WHERE `+bulkLeaseFree+` ORDER BY created_at, id LIMIT 1)
				AND `+bulkLeaseFree+`
			RETURNING `+bulkJobCols, ts(p.Now), p.Owner, ts(p.Now.Add(p.TTL)))
	})
}

// AdvanceBulkJob records a batch under the lease, compared on the version.
func (s *Store) AdvanceBulkJob(ctx context.Context, p *store.AdvanceBulkJobParams) (bool, error) {
	state, finished, expires := store.BulkRunning, any(nil), any(ts(p.Now.Add(p.TTL)))
	if p.Last {
		state, finished, expires = store.BulkDone, ts(p.Now), nil
	}
	n, err := update(ctx, s.b, "advance_bulk_job", func(q Querier) (int64, error) {
		return q.Exec(`UPDATE bulk_jobs SET task_cursor = $4, matched = matched + $5, done = done + $6,
				skipped = skipped + $7, failed = failed + $8, state = $9, finished_at = $10, lease_expires_at = $11,
				version = version + 1, updated_at = $1
			WHERE id = $2 AND version = $3 AND state = 'running' AND lease_owner = $12`,
			ts(p.Now), p.ID, p.Version, p.Cursor, p.Matched, p.Done, p.Skipped, p.Failed, state, finished, expires, p.Owner)
	})
	return n == 1, err
}

// CancelBulkJob stops a running job; its node sees the version move at its
// next batch and stops.
func (s *Store) CancelBulkJob(ctx context.Context, id string, now time.Time) (*store.BulkJob, error) {
	return update(ctx, s.b, "cancel_bulk_job", func(q Querier) (*store.BulkJob, error) {
		if _, err := q.Exec(`UPDATE bulk_jobs SET state = 'cancelled', finished_at = $2, lease_expires_at = NULL,
				version = version + 1, updated_at = $2
			WHERE id = $1 AND state = 'running'`, id, ts(now)); err != nil {
			return nil, err
		}
		return one(q, scanBulkJob, "SELECT "+bulkJobCols+" FROM bulk_jobs WHERE id = $1", id)
	})
}
