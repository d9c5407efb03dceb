package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

const scheduleCols = `name, tenant, workflow, input, cron, time_zone, pool, timeout_ms, max_attempts, overlap, missed,
	catch_up_limit, paused, next_fire_at, version, last_task_id, last_fire_at, fired, missed_fires, skipped,
	last_error, created_at, updated_at`

// scanSchedule reads scheduleCols, then extra.
func scanSchedule(r scanner, extra ...any) (*store.Schedule, error) {
	s := &store.Schedule{}
	var (
		pool, lastErr          string
		next, created, updated int64
		lastFire               sql.NullInt64
		paused                 bool
	)
	dest := []any{&s.Name, &s.Tenant, &s.Workflow, &s.Input, &s.Cron, &s.TimeZone, &pool, &s.TimeoutMS,
		&s.MaxAttempts, &s.Overlap, &s.Missed, &s.CatchUpLimit, &paused, &next, &s.Version,
		&s.LastTaskID, &lastFire, &s.Fired, &s.MissedFires, &s.Skipped, &lastErr, &created, &updated}
	if err := r.Scan(append(dest, extra...)...); err != nil {
		return nil, err
	}
	s.Pool, s.LastError, s.Paused = dockettype.Pool(pool), dockettype.Code(lastErr), paused
	s.NextFireAt, s.CreatedAt, s.UpdatedAt = fromMS(next), fromMS(created), fromMS(updated)
	s.LastFireAt = fromNullMS(lastFire)
	return s, nil
}

func validSpec(sp *store.ScheduleSpec) bool {
	return sp.Name != "" && sp.Tenant != "" && sp.Workflow != "" && sp.Cron != "" && sp.TimeZone != "" &&
		(sp.Pool == "" || sp.Pool.Valid()) && sp.TimeoutMS >= 0 && sp.MaxAttempts >= 0 && sp.CatchUpLimit >= 0 &&
		(sp.Overlap == store.OverlapAllow || sp.Overlap == store.OverlapSkip) &&
		(sp.Missed == store.MissedSkip || sp.Missed == store.MissedCatchUp)
}

// PutSchedule creates a schedule or replaces the version the caller read.
func (s *Backend) PutSchedule(ctx context.Context, p *store.PutScheduleParams) (*store.Schedule, bool, error) {
	sp := &p.Spec
	if !validSpec(sp) || p.ExpectVersion < 0 {
		return nil, false, interpretError("put_schedule", store.ErrInvalid)
	}
	input := sp.Input
	if input == nil {
		input = []byte("null")
	}
	args := []any{sp.Name, sp.Tenant, sp.Workflow, input, sp.Cron, sp.TimeZone, string(sp.Pool), sp.TimeoutMS,
		sp.MaxAttempts, sp.Overlap, sp.Missed, sp.CatchUpLimit, p.Paused, ms(p.NextFireAt), ms(p.Now)}
	var (
		out *store.Schedule
		ok  bool
	)
	err := s.write(ctx, "put_schedule", func(tx *wtx) error {
		var row *sql.Row
		if p.ExpectVersion == 0 {
			row = tx.QueryRowContext(ctx, `INSERT INTO schedules (name, tenant, workflow, input, cron, time_zone, pool,
					timeout_ms, max_attempts, overlap, missed, catch_up_limit, paused, next_fire_at, version, created_at, updated_at)
				VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, 1, ?15, ?15)
				ON CONFLICT (name) DO NOTHING
				RETURNING `+scheduleCols, args...)
		} else {
			row = tx.QueryRowContext(ctx, `UPDATE schedules SET tenant = ?2, workflow = ?3, input = ?4, cron = ?5,
					time_zone = ?6, pool = ?7, timeout_ms = ?8, max_attempts = ?9, overlap = ?10, missed = ?11,
					catch_up_limit = ?12, paused = ?13, next_fire_at = ?14, version = version + 1, updated_at = ?15
				WHERE name = ?1 AND version = ?16
				RETURNING `+scheduleCols, append(args, p.ExpectVersion)...)
		}
		var err error
		out, err = scanSchedule(row)
		ok = err == nil
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		return err
	})
	if err != nil || !ok {
		return nil, false, err
	}
	return out, true, nil
}

// GetSchedule reads one schedule.
func (s *Backend) GetSchedule(ctx context.Context, name string) (*store.Schedule, error) {
	sc, err := scanSchedule(s.r.QueryRowContext(ctx, "SELECT "+scheduleCols+" FROM schedules WHERE name = ?", name))
	return sc, interpretError("get_schedule", err)
}

// ListSchedules reads every schedule, by name.
func (s *Backend) ListSchedules(ctx context.Context) ([]*store.Schedule, error) {
	rows, err := s.r.QueryContext(ctx, "SELECT "+scheduleCols+" FROM schedules ORDER BY name LIMIT 10000")
	if err != nil {
		return nil, interpretError("list_schedules", err)
	}
	out, err := collect(rows, func(r *sql.Rows) (*store.Schedule, error) { return scanSchedule(r) })
	return out, interpretError("list_schedules", err)
}

// DeleteSchedule removes a schedule and its runs.
func (s *Backend) DeleteSchedule(ctx context.Context, name string) error {
	return s.write(ctx, "delete_schedule", func(tx *wtx) error {
		res, err := tx.ExecContext(ctx, "DELETE FROM schedules WHERE name = ?", name)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return errors.Join(err, store.ErrNotFound)
		}
		_, err = tx.ExecContext(ctx, "DELETE FROM schedule_runs WHERE schedule = ?", name)
		return err
	})
}

// FindDueSchedules reads the due schedules through schedules_due.
func (s *Backend) FindDueSchedules(ctx context.Context, p *store.FindDueSchedulesParams) ([]*store.Schedule, error) {
	if p.Limit <= 0 {
		return nil, interpretError("find_due_schedules", store.ErrInvalid)
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+scheduleCols+`,
			last_task_id <> '' AND EXISTS (SELECT 1 FROM task_queue q WHERE q.id = s.last_task_id)
		FROM schedules s WHERE paused = 0 AND next_fire_at <= ?
		ORDER BY next_fire_at, name LIMIT ?`, ms(p.Now), p.Limit)
	if err != nil {
		return nil, interpretError("find_due_schedules", err)
	}
	out, err := collect(rows, func(r *sql.Rows) (*store.Schedule, error) {
		var live bool
		sc, err := scanSchedule(r, &live)
		if err != nil {
			return nil, err
		}
		sc.LastTaskLive = live
		return sc, nil
	})
	return out, interpretError("find_due_schedules", err)
}

// AdvanceSchedule is the compare-and-set of a fire: the schedule row and
// the run in one transaction.
func (s *Backend) AdvanceSchedule(ctx context.Context, p *store.AdvanceScheduleParams) (bool, error) {
	if p.Name == "" || p.Version <= 0 || (p.Run != nil && p.Run.TaskID == "") || p.Missed < 0 || p.Skipped < 0 {
		return false, interpretError("advance_schedule", store.ErrInvalid)
	}
	var taskID string
	var fireAt sql.NullInt64
	if p.Run != nil {
		taskID, fireAt = p.Run.TaskID, sql.NullInt64{Int64: ms(p.Run.FireAt), Valid: true}
	}
	var ok bool
	err := s.write(ctx, "advance_schedule", func(tx *wtx) error {
		res, err := tx.ExecContext(ctx, `UPDATE schedules AS s SET next_fire_at = ?3, version = version + 1,
				last_task_id = CASE WHEN ?4 = '' THEN last_task_id ELSE ?4 END,
				last_fire_at = COALESCE(?5, last_fire_at),
				fired = fired + CASE WHEN ?4 = '' THEN 0 ELSE 1 END,
				missed_fires = missed_fires + ?6, skipped = skipped + ?7, last_error = ?8
			WHERE name = ?1 AND version = ?2
				AND (NOT ?9 OR (last_task_id <> '' AND EXISTS (SELECT 1 FROM task_queue q WHERE q.id = s.last_task_id)))`,
			p.Name, p.Version, ms(p.NextFireAt), taskID, fireAt, p.Missed, p.Skipped, string(p.LastError), p.IfLastTaskLive)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		ok = n == 1
		if !ok || p.Run == nil {
			return nil
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schedule_runs (schedule, fire_at, task_id) VALUES (?1, ?2, ?3)
			ON CONFLICT (schedule, fire_at) DO UPDATE SET task_id = excluded.task_id`, p.Name, fireAt, taskID); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM schedule_runs WHERE schedule = ?1 AND fire_at <
			(SELECT fire_at FROM schedule_runs WHERE schedule = ?1 ORDER BY fire_at DESC LIMIT 1 OFFSET ?2)`,
			p.Name, store.ScheduleRunsKept-1)
		return err
	})
	if err != nil {
		return false, err
	}
	return ok, nil
}

// ListScheduleRuns reads a schedule's latest runs with their tasks' states.
func (s *Backend) ListScheduleRuns(ctx context.Context, p *store.ListScheduleRunsParams) ([]store.ScheduleRun, error) {
	if p.Limit <= 0 {
		return nil, interpretError("list_schedule_runs", store.ErrInvalid)
	}
	rows, err := s.r.QueryContext(ctx, `SELECT r.fire_at, r.task_id, COALESCE(q.state, t.state, '')
		FROM schedule_runs r
		LEFT JOIN task_queue q ON q.id = r.task_id
		LEFT JOIN task_results t ON t.task_id = r.task_id
		WHERE r.schedule = ? ORDER BY r.fire_at DESC LIMIT ?`, p.Name, p.Limit)
	if err != nil {
		return nil, interpretError("list_schedule_runs", err)
	}
	out, err := collect(rows, func(r *sql.Rows) (store.ScheduleRun, error) {
		var (
			run    store.ScheduleRun
			fireAt int64
			state  string
		)
		err := r.Scan(&fireAt, &run.TaskID, &state)
		run.FireAt, run.State = fromMS(fireAt), dockettype.State(state)
		return run, err
	})
	return out, interpretError("list_schedule_runs", err)
}
