package httpapitest

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// errOutage is what a failing FaultStore call returns. It carries SQL text
// on purpose: tests check that none of it reaches a response or a log.
var errOutage = fmt.Errorf("SELECT id FROM tasks WHERE tenant = ?: database is locked: %w", store.ErrUnavailable)

// FaultStore wraps a store.Store and fails the API's calls on demand.
// Forks are not wrapped, so the pools and schedulers keep working.
type FaultStore struct {
	store.Store

	// FailKeys fails key lookups (authentication).
	FailKeys atomic.Bool
	// FailTasks fails admission, reads, cancels and pings.
	FailTasks atomic.Bool
}

var _ store.Store = (*FaultStore)(nil)

// NewFaultStore wraps st.
func NewFaultStore(st store.Store) *FaultStore { return &FaultStore{Store: st} }

func (f *FaultStore) LookupAPIKey(ctx context.Context, hash string) (*store.APIKey, error) {
	if f.FailKeys.Load() {
		return nil, errOutage
	}
	return f.Store.LookupAPIKey(ctx, hash)
}

func (f *FaultStore) Admit(ctx context.Context, p *store.AdmitParams) ([]store.AdmitResult, error) {
	if f.FailTasks.Load() {
		return nil, errOutage
	}
	return f.Store.Admit(ctx, p)
}

func (f *FaultStore) GetTask(ctx context.Context, p *store.GetTaskParams) (*dockettype.Task, error) {
	if f.FailTasks.Load() {
		return nil, errOutage
	}
	return f.Store.GetTask(ctx, p)
}

func (f *FaultStore) ListTasks(ctx context.Context, p *store.ListTasksParams) ([]*dockettype.Task, error) {
	if f.FailTasks.Load() {
		return nil, errOutage
	}
	return f.Store.ListTasks(ctx, p)
}

func (f *FaultStore) ListEvents(ctx context.Context, p *store.GetTaskParams) ([]dockettype.Event, error) {
	if f.FailTasks.Load() {
		return nil, errOutage
	}
	return f.Store.ListEvents(ctx, p)
}

func (f *FaultStore) ListEvidence(ctx context.Context, p *store.GetTaskParams) ([]dockettype.Evidence, error) {
	if f.FailTasks.Load() {
		return nil, errOutage
	}
	return f.Store.ListEvidence(ctx, p)
}

func (f *FaultStore) Cancel(ctx context.Context, p *store.CancelParams) (*store.CancelResult, error) {
	if f.FailTasks.Load() {
		return nil, errOutage
	}
	return f.Store.Cancel(ctx, p)
}

func (f *FaultStore) Ping(ctx context.Context) error {
	if f.FailTasks.Load() {
		return errOutage
	}
	return f.Store.Ping(ctx)
}
