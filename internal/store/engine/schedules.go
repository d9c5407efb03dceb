package engine

import (
	"context"

	"github.com/docket-dev/docket/internal/store"
)

const scheduleCols = `name, tenant, workflow, input, cron, time_zone, pool, timeout_ms, max_attempts, overlap, missed,
	catch_up_limit, paused, next_fire_at, version, last_task_id, last_fire_at, fired, missed_fires, skipped,
	last_error, created_at, updated_at`

// scanSchedule reads scheduleCols, then extra.
func scanSchedule(r Row, extra ...any) (*store.Schedule, error) {
	s := &store.Schedule{}
	dest := []any{&s.Name, &s.Tenant, &s.Workflow, &s.Input, &s.Cron, &s.TimeZone, &s.Pool, &s.TimeoutMS,
		&s.MaxAttempts, &s.Overlap, &s.Missed, &s.CatchUpLimit, &s.Paused, At(&s.NextFireAt), &s.Version,
		&s.LastTaskID, AtOrNil(&s.LastFireAt), &s.Fired, &s.MissedFires, &s.Skipped, &s.LastError,
		At(&s.CreatedAt), At(&s.UpdatedAt)}
	return s, r.Scan(append(dest, extra...)...)
}

func validSpec(sp *store.ScheduleSpec) bool {
	return sp.Name != "" && sp.Tenant != "" && sp.Workflow != "" && sp.Cron != "" && sp.TimeZone != "" &&
		(sp.Pool == "" || sp.Pool.Valid()) && sp.TimeoutMS >= 0 && sp.MaxAttempts >= 0 && sp.CatchUpLimit >= 0 &&
		(sp.Overlap == store.OverlapAllow || sp.Overlap == store.OverlapSkip) &&
		(sp.Missed == store.MissedSkip || sp.Missed == store.MissedCatchUp)
}

// PutSchedule creates a schedule (ExpectVersion 0) or replaces the
// version the caller read; ok is false when another writer got there
// first (the name exists, or the version moved).
func (s *Store) PutSchedule(ctx context.Context, p *store.PutScheduleParams) (*store.Schedule, bool, error) {
	sp := &p.Spec
	if !validSpec(sp) || p.ExpectVersion < 0 {
		return nil, false, store.Named("put_schedule", store.ErrInvalid)
	}
	input := sp.Input
	if input == nil {
		input = []byte("null")
	}
	args := []any{sp.Name, sp.Tenant, sp.Workflow, input, sp.Cron, sp.TimeZone, string(sp.Pool), sp.TimeoutMS,
		sp.MaxAttempts, sp.Overlap, sp.Missed, sp.CatchUpLimit, p.Paused, ts(p.NextFireAt), ts(p.Now)}
	put, err := update(ctx, s.b, "put_schedule", func(q Querier) ([]*store.Schedule, error) {
		if p.ExpectVersion == 0 {
			return all(q, func(r Row) (*store.Schedule, error) { return scanSchedule(r) },
				`INSERT INTO schedules (name, tenant, workflow, input, cron, time_zone, pool, timeout_ms, max_attempts,
					overlap, missed, catch_up_limit, paused, next_fire_at, version, created_at, updated_at)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, 1, $15, $15)
				ON CONFLICT (name) DO NOTHING
				RETURNING `+scheduleCols, args...)
		}
		return all(q, func(r Row) (*store.Schedule, error) { return scanSchedule(r) },
			`UPDATE schedules SET tenant = $2, workflow = $3, input = $4, cron = $5, time_zone = $6, pool = $7,
				timeout_ms = $8, max_attempts = $9, overlap = $10, missed = $11, catch_up_limit = $12, paused = $13,
				next_fire_at = $14, version = version + 1, updated_at = $15
			WHERE name = $1 AND version = $16
			RETURNING `+scheduleCols, append(args, p.ExpectVersion)...)
	})
	if err != nil || len(put) == 0 {
		return nil, false, err
	}
	return put[0], true, nil
}

// GetSchedule reads one schedule.
func (s *Store) GetSchedule(ctx context.Context, name string) (*store.Schedule, error) {
	return read(ctx, s.b, "get_schedule", func(q Querier) (*store.Schedule, error) {
		return one(q, func(r Row) (*store.Schedule, error) { return scanSchedule(r) },
			"SELECT "+scheduleCols+" FROM schedules WHERE name = $1", name)
	})
}

// ListSchedules reads every schedule, by name.
func (s *Store) ListSchedules(ctx context.Context) ([]*store.Schedule, error) {
	return read(ctx, s.b, "list_schedules", func(q Querier) ([]*store.Schedule, error) {
		return all(q, func(r Row) (*store.Schedule, error) { return scanSchedule(r) },
			"SELECT "+scheduleCols+" FROM schedules ORDER BY name LIMIT 10000")
	})
}

// DeleteSchedule removes a schedule and its runs.
func (s *Store) DeleteSchedule(ctx context.Context, name string) error {
	_, err := update(ctx, s.b, "delete_schedule", func(q Querier) (int64, error) {
		n, err := q.Exec("DELETE FROM schedules WHERE name = $1", name)
		if err != nil {
			return 0, err
		}
		if n == 0 {
			return 0, store.ErrNotFound
		}
		return q.Exec("DELETE FROM schedule_runs WHERE schedule = $1", name)
	})
	return err
}

// FindDueSchedules reads the due schedules through schedules_due; the last
// task's liveness is one primary-key probe of task_queue each.
func (s *Store) FindDueSchedules(ctx context.Context, p *store.FindDueSchedulesParams) ([]*store.Schedule, error) {
	if p.Limit <= 0 {
		return nil, store.Named("find_due_schedules", store.ErrInvalid)
	}
	return read(ctx, s.b, "find_due_schedules", func(q Querier) ([]*store.Schedule, error) {
		return all(q, func(r Row) (*store.Schedule, error) {
			var live bool
			sc, err := scanSchedule(r, &live)
			if sc != nil {
				sc.LastTaskLive = live
			}
			return sc, err
		}, `SELECT `+scheduleCols+`,
				last_task_id <> '' AND EXISTS (SELECT 1 FROM task_queue q WHERE q.id = s.last_task_id)
			FROM schedules s WHERE `+s.b.Dialect().Fires+` AND next_fire_at <= $1
			ORDER BY next_fire_at, name LIMIT $2`, ts(p.Now), p.Limit)
	})
}

// AdvanceSchedule is the compare-and-set of a fire: the schedule row and
// the run in one transaction.
func (s *Store) AdvanceSchedule(ctx context.Context, p *store.AdvanceScheduleParams) (bool, error) {
	if p.Name == "" || p.Version <= 0 || (p.Run != nil && p.Run.TaskID == "") || p.Missed < 0 || p.Skipped < 0 {
		return false, store.Named("advance_schedule", store.ErrInvalid)
	}
	return update(ctx, s.b, "advance_schedule", func(q Querier) (bool, error) {
		var (
			taskID string
			fireAt any // nil: keep the last fire time
		)
		if p.Run != nil {
			taskID, fireAt = p.Run.TaskID, ts(p.Run.FireAt)
		}
		n, err := q.Exec(`UPDATE schedules SET next_fire_at = $3, version = version + 1,
				last_task_id = CASE WHEN $4 = '' THEN last_task_id ELSE $4 END,
				last_fire_at = COALESCE($5, last_fire_at),
				fired = fired + CASE WHEN $4 = '' THEN 0 ELSE 1 END,
				missed_fires = missed_fires + $6, skipped = skipped + $7, last_error = $8
			WHERE name = $1 AND version = $2
				AND (NOT $9 OR (last_task_id <> '' AND EXISTS (SELECT 1 FROM task_queue q WHERE q.id = schedules.last_task_id)))`,
			p.Name, p.Version, ts(p.NextFireAt), taskID, fireAt, p.Missed, p.Skipped, string(p.LastError), p.IfLastTaskLive)
		if err != nil || n != 1 || p.Run == nil {
			return n == 1, err
		}
		if _, err := q.Exec(`INSERT INTO schedule_runs (schedule, fire_at, task_id) VALUES ($1, $2, $3)
			ON CONFLICT (schedule, fire_at) DO UPDATE SET task_id = excluded.task_id`, p.Name, fireAt, taskID); err != nil {
			return false, err
		}
		_, err = q.Exec(`DELETE FROM schedule_runs WHERE schedule = $1 AND fire_at <
			(SELECT fire_at FROM schedule_runs WHERE schedule = $1 ORDER BY fire_at DESC LIMIT 1 OFFSET $2)`,
			p.Name, store.ScheduleRunsKept-1)
		return err == nil, err
	})
}

// ListScheduleRuns reads a schedule's latest runs with their tasks' states.
func (s *Store) ListScheduleRuns(ctx context.Context, p *store.ListScheduleRunsParams) ([]store.ScheduleRun, error) {
	if p.Limit <= 0 {
		return nil, store.Named("list_schedule_runs", store.ErrInvalid)
	}
	return read(ctx, s.b, "list_schedule_runs", func(q Querier) ([]store.ScheduleRun, error) {
		return all(q, func(r Row) (store.ScheduleRun, error) {
			var run store.ScheduleRun
			err := r.Scan(At(&run.FireAt), &run.TaskID, &run.State)
			return run, err
		}, `SELECT r.fire_at, r.task_id, COALESCE(q.state, t.state, '')
			FROM schedule_runs r
			LEFT JOIN task_queue q ON q.id = r.task_id
			LEFT JOIN task_results t ON t.task_id = r.task_id
			WHERE r.schedule = $1 ORDER BY r.fire_at DESC LIMIT $2`, p.Name, p.Limit)
	})
}
