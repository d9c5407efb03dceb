package queue

import (
	"context"
	"fmt"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// HeartbeatRemote renews a remote worker's leases in one store transaction
// and answers, per lease in the order given, whether to keep working: ok,
// or cancelled, timed_out or lease_lost (stop that task). A token that is
// not valid for the worker's key is lease_lost without touching the store.
func (s *Service) HeartbeatRemote(ctx context.Context, w *RemoteWorker, tokens []string) ([]LeaseStatus, error) {
	if len(tokens) > MaxHeartbeatLeases {
		return nil, dockettype.NewError(dockettype.CodeInvalidRequest, fmt.Sprintf("at most %d leases per heartbeat", MaxHeartbeatLeases))
	}
	st, key, err := s.remote(ctx)
	if err != nil {
		return nil, err
	}
	checked, ok := s.verify(key, w, tokens)
	out := make([]LeaseStatus, len(tokens))
	var leases []store.Lease
	seen := map[store.Lease]bool{}
	for i := range tokens {
		if !ok[i] {
			out[i] = LeaseLost
			continue
		}
		if l := checked[i].lease(); !seen[l] {
			seen[l] = true
			leases = append(leases, l)
		}
	}
	s.workers.saw(w, nil, len(leases), s.clock.Now())
	if len(leases) == 0 {
		return out, nil
	}
	qctx, cancel := context.WithTimeout(ctx, s.cfg.QueryTimeout)
	refused, err := st.Heartbeat(qctx, &store.HeartbeatParams{Now: s.clock.Now(), LeaseTTL: s.cfg.LeaseTTL, Leases: leases})
	cancel()
	if err != nil {
		return nil, s.storeFailure(ctx, "heartbeat", err)
	}
	why := make(map[store.Lease]LeaseStatus, len(refused))
	for _, r := range refused {
		s.metrics.FencingRejections.WithLabelValues("remote_heartbeat").Inc()
		switch r.State {
		case dockettype.StateCancelled:
			why[r.Lease] = LeaseCancelled
		case dockettype.StateTimedOut:
			why[r.Lease] = LeaseTimedOut
		default:
			why[r.Lease] = LeaseLost
		}
	}
	for i := range tokens {
		if ok[i] {
			out[i] = LeaseOK
			if st, refused := why[checked[i].lease()]; refused {
				out[i] = st
			}
		}
	}
	return out, nil
}
