package queue

import (
	"context"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// RemoteDependencies reads, for a remote worker holding a lease, the
// outcome of each task the leased task depends on (fan-in), in the order
// given at submission. A token that does not check out (altered, forged,
// another key's, or a tenant the key does not serve) is LeaseLost and
// reads nothing.
func (s *Service) RemoteDependencies(ctx context.Context, w *RemoteWorker, lease string) ([]dockettype.DependencyResult, LeaseStatus, error) {
	st, key, err := s.remote(ctx)
	if err != nil {
		return nil, "", err
	}
	checked, ok := s.verify(key, w, []string{lease})
	if !ok[0] {
		return []dockettype.DependencyResult{}, LeaseLost, nil
	}
	c := checked[0].claims
	qctx, cancel := context.WithTimeout(ctx, s.cfg.QueryTimeout)
	defer cancel()
	out, err := st.DependencyResults(qctx, &store.GetTaskParams{Tenant: c.Tenant, TaskID: c.TaskID})
	if err != nil {
		return nil, "", s.storeFailure(ctx, "dependency_results", err)
	}
	return out, LeaseOK, nil
}
