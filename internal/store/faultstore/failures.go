package faultstore

import (
	"context"
	"time"

	"github.com/docket-dev/docket/internal/store"
)

func (s *Store) GetInput(ctx context.Context, p *store.GetTaskParams) ([]byte, error) {
	if err := s.before(ctx, "get_input"); err != nil {
		return nil, err
	}
	return s.inner.GetInput(ctx, p)
}

func (s *Store) Retry(ctx context.Context, p *store.RetryParams) ([]store.RetryResult, error) {
	if err := s.before(ctx, "retry"); err != nil {
		return nil, err
	}
	return s.inner.Retry(ctx, p)
}

func (s *Store) MatchTasks(ctx context.Context, p *store.MatchTasksParams) ([]store.MatchedTask, error) {
	if err := s.before(ctx, "match_tasks"); err != nil {
		return nil, err
	}
	return s.inner.MatchTasks(ctx, p)
}

func (s *Store) DeleteTasks(ctx context.Context, p *store.DeleteTasksParams) ([]string, error) {
	if err := s.before(ctx, "delete_tasks"); err != nil {
		return nil, err
	}
	return s.inner.DeleteTasks(ctx, p)
}

func (s *Store) DeadLetters(ctx context.Context, p *store.DeadLettersParams) ([]store.DeadLetterGroup, error) {
	if err := s.before(ctx, "dead_letters"); err != nil {
		return nil, err
	}
	return s.inner.DeadLetters(ctx, p)
}

func (s *Store) CreateBulkJob(ctx context.Context, j *store.BulkJob) error {
	if err := s.before(ctx, "create_bulk_job"); err != nil {
		return err
	}
	return s.inner.CreateBulkJob(ctx, j)
}

func (s *Store) GetBulkJob(ctx context.Context, id string) (*store.BulkJob, error) {
	if err := s.before(ctx, "get_bulk_job"); err != nil {
		return nil, err
	}
	return s.inner.GetBulkJob(ctx, id)
}

func (s *Store) LeaseBulkJob(ctx context.Context, p *store.LeaseBulkJobParams) (*store.BulkJob, error) {
	if err := s.before(ctx, "lease_bulk_job"); err != nil {
		return nil, err
	}
	return s.inner.LeaseBulkJob(ctx, p)
}

func (s *Store) AdvanceBulkJob(ctx context.Context, p *store.AdvanceBulkJobParams) (bool, error) {
	if err := s.before(ctx, "advance_bulk_job"); err != nil {
		return false, err
	}
	return s.inner.AdvanceBulkJob(ctx, p)
}

func (s *Store) CancelBulkJob(ctx context.Context, id string, now time.Time) (*store.BulkJob, error) {
	if err := s.before(ctx, "cancel_bulk_job"); err != nil {
		return nil, err
	}
	return s.inner.CancelBulkJob(ctx, id, now)
}
