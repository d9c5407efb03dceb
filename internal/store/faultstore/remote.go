package faultstore

import (
	"context"
	"time"

	"github.com/docket-dev/docket/internal/store"
)

func (s *Store) PutWorkflow(ctx context.Context, p *store.PutWorkflowParams) (*store.Workflow, bool, error) {
	if err := s.before(ctx, "put_workflow"); err != nil {
		return nil, false, err
	}
	return s.inner.PutWorkflow(ctx, p)
}

func (s *Store) GetWorkflow(ctx context.Context, name string) (*store.Workflow, error) {
	if err := s.before(ctx, "get_workflow"); err != nil {
		return nil, err
	}
	return s.inner.GetWorkflow(ctx, name)
}

func (s *Store) ListWorkflows(ctx context.Context) ([]*store.Workflow, error) {
	if err := s.before(ctx, "list_workflows"); err != nil {
		return nil, err
	}
	return s.inner.ListWorkflows(ctx)
}

func (s *Store) DeleteWorkflow(ctx context.Context, name string) error {
	if err := s.before(ctx, "delete_workflow"); err != nil {
		return err
	}
	return s.inner.DeleteWorkflow(ctx, name)
}

func (s *Store) LeaseKey(ctx context.Context, candidate []byte) ([]byte, error) {
	if err := s.before(ctx, "lease_key"); err != nil {
		return nil, err
	}
	return s.inner.LeaseKey(ctx, candidate)
}

func (s *Store) UpsertWorkers(ctx context.Context, workers []*store.Worker) error {
	if err := s.before(ctx, "upsert_workers"); err != nil {
		return err
	}
	return s.inner.UpsertWorkers(ctx, workers)
}

func (s *Store) ListWorkers(ctx context.Context, since time.Time) ([]*store.Worker, error) {
	if err := s.before(ctx, "list_workers"); err != nil {
		return nil, err
	}
	return s.inner.ListWorkers(ctx, since)
}

func (s *Store) DeleteWorkersBefore(ctx context.Context, before time.Time) (int, error) {
	if err := s.before(ctx, "delete_workers"); err != nil {
		return 0, err
	}
	return s.inner.DeleteWorkersBefore(ctx, before)
}
