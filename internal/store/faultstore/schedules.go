package faultstore

import (
	"context"

	"github.com/docket-dev/docket/internal/store"
)

func (s *Store) PutSchedule(ctx context.Context, p *store.PutScheduleParams) (*store.Schedule, bool, error) {
	if err := s.before(ctx, "put_schedule"); err != nil {
		return nil, false, err
	}
	return s.inner.PutSchedule(ctx, p)
}

func (s *Store) GetSchedule(ctx context.Context, name string) (*store.Schedule, error) {
	if err := s.before(ctx, "get_schedule"); err != nil {
		return nil, err
	}
	return s.inner.GetSchedule(ctx, name)
}

func (s *Store) ListSchedules(ctx context.Context) ([]*store.Schedule, error) {
	if err := s.before(ctx, "list_schedules"); err != nil {
		return nil, err
	}
	return s.inner.ListSchedules(ctx)
}

func (s *Store) DeleteSchedule(ctx context.Context, name string) error {
	if err := s.before(ctx, "delete_schedule"); err != nil {
		return err
	}
	return s.inner.DeleteSchedule(ctx, name)
}

func (s *Store) FindDueSchedules(ctx context.Context, p *store.FindDueSchedulesParams) ([]*store.Schedule, error) {
	if err := s.before(ctx, "find_due_schedules"); err != nil {
		return nil, err
	}
	return s.inner.FindDueSchedules(ctx, p)
}

func (s *Store) AdvanceSchedule(ctx context.Context, p *store.AdvanceScheduleParams) (bool, error) {
	if err := s.before(ctx, "advance_schedule"); err != nil {
		return false, err
	}
	return s.inner.AdvanceSchedule(ctx, p)
}

func (s *Store) ListScheduleRuns(ctx context.Context, p *store.ListScheduleRunsParams) ([]store.ScheduleRun, error) {
	if err := s.before(ctx, "list_schedule_runs"); err != nil {
		return nil, err
	}
	return s.inner.ListScheduleRuns(ctx, p)
}
