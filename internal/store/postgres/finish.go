package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// Finish applies a batch of attempt outcomes, each fenced by its lease.
func (s *Store) Finish(ctx context.Context, p *store.FinishParams) ([]store.FinishResult, error) {
	for _, it := range p.Items {
		switch it.Kind {
		case store.FinishSucceed, store.FinishFail, store.FinishRetry, store.FinishRelease:
		default:
			return nil, fmt.Errorf("finish: kind %d: %w", it.Kind, store.ErrInvalid)
		}
	}
	ids := make([]string, len(p.Items))
	for i, it := range p.Items {
		ids[i] = it.TaskID
	}
	var out []store.FinishResult
	err := s.write(ctx, "finish", func(tx pgx.Tx) error {
		out = make([]store.FinishResult, len(p.Items))
		t := newTxn(ctx, tx, p.Now)
		if err := lockTasks(ctx, tx, ids); err != nil {
			return err
		}
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
		state dockettype.State
		row   pgx.Row
		code  = string(it.Code)
	)
	switch it.Kind {
	case store.FinishSucceed:
		state, code = dockettype.StateSucceeded, ""
	case store.FinishFail:
		state = dockettype.StateFailed
	case store.FinishRetry:
		state = dockettype.StateQueued
	case store.FinishRelease:
		return t.releaseLease(it)
	}
	if state == dockettype.StateQueued {
		// A delayed retry is not ready until a claim promotes it, so the
		// ready counters do not change here.
		row = t.tx.QueryRow(t.ctx, `UPDATE tasks SET state = 'queued', error_code = $1, run_after = $2,
				lease_owner = NULL, lease_expires_at = NULL
			WHERE id = $3 AND lease_epoch = $4 AND state = 'running' RETURNING id`,
			code, ts(it.RunAfter), it.TaskID, it.Epoch)
	} else {
		var result []byte
		if it.Kind == store.FinishSucceed && it.Result != nil {
			result = it.Result
		}
		row = t.tx.QueryRow(t.ctx, `UPDATE tasks SET state = $1, result = $2, error_code = $3, finished_at = $4,
				lease_owner = NULL, lease_expires_at = NULL
			WHERE id = $5 AND lease_epoch = $6 AND state = 'running' RETURNING id`,
			string(state), result, nullString(code), t.now, it.TaskID, it.Epoch)
	}
	var id string
	err := row.Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
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
	var tenant, pool string
	err := t.tx.QueryRow(t.ctx, `UPDATE tasks SET state = 'queued', attempt = attempt - 1, run_after = NULL,
			lease_owner = NULL, lease_expires_at = NULL
		WHERE id = $1 AND lease_epoch = $2 AND state = 'running' RETURNING tenant, pool`, it.TaskID, it.Epoch).Scan(&tenant, &pool)
	if errors.Is(err, pgx.ErrNoRows) {
		cur, err := t.currentState(it.TaskID)
		return store.FinishResult{Applied: false, State: cur}, err
	}
	if err != nil {
		return store.FinishResult{}, err
	}
	t.event(it.TaskID, dockettype.StateRunning, dockettype.StateQueued, it.Epoch, dockettype.CodeShutdown)
	t.queueDelta(dockettype.Pool(pool), tenant, 1)
	return store.FinishResult{Applied: true, State: dockettype.StateQueued}, nil
}

func (t *txn) currentState(taskID string) (dockettype.State, error) {
	var st string
	err := t.tx.QueryRow(t.ctx, "SELECT state FROM tasks WHERE id = $1", taskID).Scan(&st)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return dockettype.State(st), err
}

func nullString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// AppendEvidence records evidence if the lease is still current. The task
// row is share-locked while the evidence is written, so a cancel, timeout or
// recovery cannot commit in between: evidence is never written after the
// lease it names has ended.
func (s *Store) AppendEvidence(ctx context.Context, p *store.AppendEvidenceParams) error {
	return s.write(ctx, "append_evidence", func(tx pgx.Tx) error {
		var attempt int
		err := tx.QueryRow(ctx, "SELECT attempt FROM tasks WHERE id = $1 AND lease_epoch = $2 AND state = 'running' FOR SHARE",
			p.Lease.TaskID, p.Lease.Epoch).Scan(&attempt)
		if errors.Is(err, pgx.ErrNoRows) {
			return store.ErrStaleLease
		}
		if err != nil || len(p.Items) == 0 {
			return err
		}
		kinds := make([]string, len(p.Items))
		bodies := make([][]byte, len(p.Items))
		for i, it := range p.Items {
			kinds[i], bodies[i] = it.Kind, it.Body
			if bodies[i] == nil {
				bodies[i] = []byte("null") // as admission stores a nil input
			}
		}
		_, err = tx.Exec(ctx, `INSERT INTO evidence (task_id, attempt, epoch, kind, body, created_at)
			SELECT $1, $2, $3, e.kind, e.body, $4
			FROM unnest($5::text[], $6::bytea[]) WITH ORDINALITY AS e (kind, body, ord)
			ORDER BY e.ord`, p.Lease.TaskID, attempt, p.Lease.Epoch, ts(p.Now), kinds, bodies)
		return err
	})
}

// Heartbeat extends each current lease in one statement and returns the
// refused ones.
func (s *Store) Heartbeat(ctx context.Context, p *store.HeartbeatParams) ([]store.Lease, error) {
	if len(p.Leases) == 0 {
		return nil, nil
	}
	ids := make([]string, len(p.Leases))
	epochs := make([]int64, len(p.Leases))
	for i, l := range p.Leases {
		ids[i], epochs[i] = l.TaskID, l.Epoch
	}
	var refused []store.Lease
	err := s.write(ctx, "heartbeat", func(tx pgx.Tx) error {
		refused = nil
		if err := lockTasks(ctx, tx, ids); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `UPDATE tasks SET lease_expires_at = $1
			FROM unnest($2::text[], $3::bigint[]) AS l (id, epoch)
			WHERE tasks.id = l.id AND tasks.lease_epoch = l.epoch AND tasks.state = 'running'
			RETURNING tasks.id, tasks.lease_epoch`, ts(p.Now.Add(p.LeaseTTL)), ids, epochs)
		if err != nil {
			return err
		}
		renewed := map[store.Lease]bool{}
		var l store.Lease
		_, err = pgx.ForEachRow(rows, []any{&l.TaskID, &l.Epoch}, func() error {
			renewed[l] = true
			return nil
		})
		if err != nil {
			return err
		}
		for _, l := range p.Leases {
			if !renewed[l] {
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
