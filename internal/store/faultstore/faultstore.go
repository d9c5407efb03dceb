// Package faultstore wraps a store.Store to inject failures and stalls into
// chosen operations, for tests of outages and partial dependency failure.
// A hook runs before the real call; if it returns an error the real call is
// skipped, so nothing is written.
//
//	fs := faultstore.New(real)
//	fs.Set("finish", faultstore.FailEvery(2, store.ErrUnavailable)) // every 2nd finish fails
//	fs.Set("find_expired_leases", faultstore.BlockUntil(release))  // a stuck recovery scan
package faultstore

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// Hook runs before an operation; a non-nil error fails it.
type Hook func(ctx context.Context, call int64) error

// Store is a fault-injecting store.Store.
type Store struct {
	inner store.Store
	h     *hooks
}

type hooks struct {
	mu    sync.RWMutex
	hooks map[string]Hook
	calls sync.Map // op → *atomic.Int64
	fails sync.Map // op → *atomic.Int64
}

var _ store.Store = (*Store)(nil)

// New wraps inner.
func New(inner store.Store) *Store {
	return &Store{inner: inner, h: &hooks{hooks: map[string]Hook{}}}
}

// Set installs (or, with nil, removes) the hook of op. Ops are the
// snake_case method names: "admit", "claim", "finish", "append_evidence",
// "heartbeat", "find_expired_leases", "recover_leases", "find_overdue",
// "expire_tasks", "cancel", "get_task", "ping", …; "*" matches every op.
func (s *Store) Set(op string, h Hook) {
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	if h == nil {
		delete(s.h.hooks, op)
		return
	}
	s.h.hooks[op] = h
}

// Clear removes every hook.
func (s *Store) Clear() {
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	s.h.hooks = map[string]Hook{}
}

// Calls is how many times op was called (through any fork).
func (s *Store) Calls(op string) int64 { return counter(&s.h.calls, op).Load() }

// Failures is how many calls of op a hook failed.
func (s *Store) Failures(op string) int64 { return counter(&s.h.fails, op).Load() }

func counter(m *sync.Map, op string) *atomic.Int64 {
	v, _ := m.LoadOrStore(op, new(atomic.Int64))
	return v.(*atomic.Int64)
}

func (s *Store) before(ctx context.Context, op string) error {
	n := counter(&s.h.calls, op).Add(1)
	s.h.mu.RLock()
	h, ok := s.h.hooks[op]
	if !ok {
		h, ok = s.h.hooks["*"]
	}
	s.h.mu.RUnlock()
	if !ok {
		return nil
	}
	if err := h(ctx, n); err != nil {
		counter(&s.h.fails, op).Add(1)
		return &store.OpError{Op: op, Err: fmt.Errorf("faultstore: %w", err)}
	}
	return nil
}

// Fail fails every call with err.
func Fail(err error) Hook { return func(context.Context, int64) error { return err } }

// FailEvery fails every nth call with err.
func FailEvery(n int64, err error) Hook {
	return func(_ context.Context, call int64) error {
		if call%n == 0 {
			return err
		}
		return nil
	}
}

// BlockUntil stalls each call until release is closed (or the call's
// context ends), then lets it through.
func BlockUntil(release <-chan struct{}) Hook {
	return func(ctx context.Context, _ int64) error {
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (s *Store) Admit(ctx context.Context, p *store.AdmitParams) ([]store.AdmitResult, error) {
	if err := s.before(ctx, "admit"); err != nil {
		return nil, err
	}
	return s.inner.Admit(ctx, p)
}

func (s *Store) Claim(ctx context.Context, p *store.ClaimParams) ([]*store.ClaimedTask, error) {
	if err := s.before(ctx, "claim"); err != nil {
		return nil, err
	}
	return s.inner.Claim(ctx, p)
}

func (s *Store) Finish(ctx context.Context, p *store.FinishParams) ([]store.FinishResult, error) {
	if err := s.before(ctx, "finish"); err != nil {
		return nil, err
	}
	return s.inner.Finish(ctx, p)
}

func (s *Store) AppendEvidence(ctx context.Context, p *store.AppendEvidenceParams) error {
	if err := s.before(ctx, "append_evidence"); err != nil {
		return err
	}
	return s.inner.AppendEvidence(ctx, p)
}

func (s *Store) Heartbeat(ctx context.Context, p *store.HeartbeatParams) ([]store.RefusedLease, error) {
	if err := s.before(ctx, "heartbeat"); err != nil {
		return nil, err
	}
	return s.inner.Heartbeat(ctx, p)
}

func (s *Store) FindExpiredLeases(ctx context.Context, p *store.FindExpiredLeasesParams) ([]store.ExpiredLease, error) {
	if err := s.before(ctx, "find_expired_leases"); err != nil {
		return nil, err
	}
	return s.inner.FindExpiredLeases(ctx, p)
}

func (s *Store) RecoverLeases(ctx context.Context, p *store.RecoverLeasesParams) (store.RecoverResult, error) {
	if err := s.before(ctx, "recover_leases"); err != nil {
		return store.RecoverResult{}, err
	}
	return s.inner.RecoverLeases(ctx, p)
}

func (s *Store) FindOverdue(ctx context.Context, p *store.FindOverdueParams) ([]store.OverdueTask, error) {
	if err := s.before(ctx, "find_overdue"); err != nil {
		return nil, err
	}
	return s.inner.FindOverdue(ctx, p)
}

func (s *Store) ExpireTasks(ctx context.Context, p *store.ExpireTasksParams) ([]store.OverdueTask, error) {
	if err := s.before(ctx, "expire_tasks"); err != nil {
		return nil, err
	}
	return s.inner.ExpireTasks(ctx, p)
}

func (s *Store) Cancel(ctx context.Context, p *store.CancelParams) (*store.CancelResult, error) {
	if err := s.before(ctx, "cancel"); err != nil {
		return nil, err
	}
	return s.inner.Cancel(ctx, p)
}

func (s *Store) CancelBatch(ctx context.Context, p *store.CancelBatchParams) ([]store.CancelBatchResult, error) {
	if err := s.before(ctx, "cancel"); err != nil {
		return nil, err
	}
	return s.inner.CancelBatch(ctx, p)
}

func (s *Store) GetTask(ctx context.Context, p *store.GetTaskParams) (*dockettype.Task, error) {
	if err := s.before(ctx, "get_task"); err != nil {
		return nil, err
	}
	return s.inner.GetTask(ctx, p)
}

func (s *Store) ListTasks(ctx context.Context, p *store.ListTasksParams) ([]*dockettype.Task, error) {
	if err := s.before(ctx, "list_tasks"); err != nil {
		return nil, err
	}
	return s.inner.ListTasks(ctx, p)
}

func (s *Store) ListEvents(ctx context.Context, p *store.GetTaskParams) ([]dockettype.Event, error) {
	if err := s.before(ctx, "list_events"); err != nil {
		return nil, err
	}
	return s.inner.ListEvents(ctx, p)
}

func (s *Store) ListEvidence(ctx context.Context, p *store.GetTaskParams) ([]dockettype.Evidence, error) {
	if err := s.before(ctx, "list_evidence"); err != nil {
		return nil, err
	}
	return s.inner.ListEvidence(ctx, p)
}

func (s *Store) DependencyResults(ctx context.Context, p *store.GetTaskParams) ([]dockettype.DependencyResult, error) {
	if err := s.before(ctx, "dependency_results"); err != nil {
		return nil, err
	}
	return s.inner.DependencyResults(ctx, p)
}

func (s *Store) TaskStates(ctx context.Context, p *store.TaskStatesParams) (map[string]dockettype.State, error) {
	if err := s.before(ctx, "task_states"); err != nil {
		return nil, err
	}
	return s.inner.TaskStates(ctx, p)
}

func (s *Store) DeleteFinished(ctx context.Context, p *store.DeleteFinishedParams) (int, error) {
	if err := s.before(ctx, "delete_finished"); err != nil {
		return 0, err
	}
	return s.inner.DeleteFinished(ctx, p)
}

func (s *Store) Stats(ctx context.Context) (*store.Stats, error) {
	if err := s.before(ctx, "stats"); err != nil {
		return nil, err
	}
	return s.inner.Stats(ctx)
}

func (s *Store) Throughput(ctx context.Context, p *store.ThroughputParams) ([]store.ThroughputBucket, error) {
	if err := s.before(ctx, "throughput"); err != nil {
		return nil, err
	}
	return s.inner.Throughput(ctx, p)
}

func (s *Store) EnsureTenant(ctx context.Context, p *store.EnsureTenantParams) (bool, error) {
	if err := s.before(ctx, "ensure_tenant"); err != nil {
		return false, err
	}
	return s.inner.EnsureTenant(ctx, p)
}

func (s *Store) GetTenant(ctx context.Context, id string) (*store.Tenant, error) {
	if err := s.before(ctx, "get_tenant"); err != nil {
		return nil, err
	}
	return s.inner.GetTenant(ctx, id)
}

func (s *Store) ListTenants(ctx context.Context) ([]*store.Tenant, error) {
	if err := s.before(ctx, "list_tenants"); err != nil {
		return nil, err
	}
	return s.inner.ListTenants(ctx)
}

func (s *Store) UpdateTenant(ctx context.Context, p *store.UpdateTenantParams) (*store.Tenant, error) {
	if err := s.before(ctx, "update_tenant"); err != nil {
		return nil, err
	}
	return s.inner.UpdateTenant(ctx, p)
}

func (s *Store) CreateAPIKey(ctx context.Context, p *store.CreateAPIKeyParams) (*store.APIKey, error) {
	if err := s.before(ctx, "create_api_key"); err != nil {
		return nil, err
	}
	return s.inner.CreateAPIKey(ctx, p)
}

func (s *Store) LookupAPIKey(ctx context.Context, hash string) (*store.APIKey, error) {
	if err := s.before(ctx, "lookup_api_key"); err != nil {
		return nil, err
	}
	return s.inner.LookupAPIKey(ctx, hash)
}

func (s *Store) ListAPIKeys(ctx context.Context, tenant string) ([]*store.APIKey, error) {
	if err := s.before(ctx, "list_api_keys"); err != nil {
		return nil, err
	}
	return s.inner.ListAPIKeys(ctx, tenant)
}

func (s *Store) RevokeAPIKey(ctx context.Context, p *store.RevokeAPIKeyParams) (*store.APIKey, error) {
	if err := s.before(ctx, "revoke_api_key"); err != nil {
		return nil, err
	}
	return s.inner.RevokeAPIKey(ctx, p)
}

func (s *Store) PublishRuleSet(ctx context.Context, p *store.PublishRuleSetParams) (*store.RuleSet, error) {
	if err := s.before(ctx, "publish_rule_set"); err != nil {
		return nil, err
	}
	return s.inner.PublishRuleSet(ctx, p)
}

func (s *Store) ListRuleSets(ctx context.Context) ([]*store.RuleSet, error) {
	if err := s.before(ctx, "list_rule_sets"); err != nil {
		return nil, err
	}
	return s.inner.ListRuleSets(ctx)
}

func (s *Store) GetRuleSet(ctx context.Context, version string) (*store.RuleSet, error) {
	if err := s.before(ctx, "get_rule_set"); err != nil {
		return nil, err
	}
	return s.inner.GetRuleSet(ctx, version)
}

func (s *Store) LatestRuleSet(ctx context.Context) (*store.RuleSet, error) {
	if err := s.before(ctx, "latest_rule_set"); err != nil {
		return nil, err
	}
	return s.inner.LatestRuleSet(ctx)
}

func (s *Store) DatabaseTime(ctx context.Context) (time.Time, error) {
	if err := s.before(ctx, "database_time"); err != nil {
		return time.Time{}, err
	}
	return s.inner.DatabaseTime(ctx)
}

func (s *Store) Ping(ctx context.Context) error {
	if err := s.before(ctx, "ping"); err != nil {
		return err
	}
	return s.inner.Ping(ctx)
}

// Fork forks the inner store; the fork shares this wrapper's hooks and
// counters.
func (s *Store) Fork(name string, opts store.ForkOptions) (store.Store, error) {
	f, err := s.inner.Fork(name, opts)
	if err != nil {
		return nil, err
	}
	return &Store{inner: f, h: s.h}, nil
}

func (s *Store) Close() error { return s.inner.Close() }

// Listen forwards to the inner store's Listener, if it has one; otherwise
// it delivers nothing until ctx ends.
func (s *Store) Listen(ctx context.Context, fn func(store.Notification)) error {
	if l, ok := s.inner.(store.Listener); ok {
		return l.Listen(ctx, fn)
	}
	<-ctx.Done()
	return nil
}
