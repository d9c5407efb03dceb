package queue

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/storefailure"
)

// readiness answers Ready: whether the store reads, is sound and takes
// writes. When the store can probe its writes (store.WriteProber), a probe
// runs at most every ReadyProbeInterval and, while writes fail, at most
// once a second, so that an idle node on a full disk turns not ready and
// a node whose disk was freed turns ready again, whatever the rate of
// readiness checks (an unauthenticated route: they cannot make writes).
type readiness struct {
	interval time.Duration

	mu        sync.Mutex
	probedAt  time.Time
	lastCode  dockettype.Code // the last answer's code, "" when ready: transitions are logged
	probeFail bool
}

// Ready reports whether this node can serve: nil, or a *dockettype.Error
// with code store_unavailable (the store does not answer), store_corrupt
// (a call found the database damaged; until a restart) or writes_failing
// (writes fail; until a write succeeds).
func (s *Service) Ready(ctx context.Context) error {
	qctx, cancel := context.WithTimeout(ctx, s.cfg.QueryTimeout)
	defer cancel()
	s.probeWrites(qctx)
	err := s.store.Ping(qctx)
	var out error
	var code dockettype.Code
	switch {
	case err == nil:
	case errors.Is(err, store.ErrCorrupt):
		code = dockettype.CodeStoreCorrupt
		out = dockettype.NewError(code, "the task store's database is corrupt; restore it from a backup")
	case errors.Is(err, store.ErrWritesFailing):
		code = dockettype.CodeWritesFailing
		out = dockettype.NewError(code, "the task store's writes fail (is its disk full?)")
	default:
		return s.storeFailure(ctx, "ping", err)
	}
	s.ready.mu.Lock()
	changed := s.ready.lastCode != code
	s.ready.lastCode = code
	s.ready.mu.Unlock()
	if changed && code != "" {
		s.log.ErrorContext(ctx, "not ready", "code", code)
	} else if changed {
		s.log.InfoContext(ctx, "ready again")
	}
	return out
}

// probeWrites runs the store's write probe when one is due.
func (s *Service) probeWrites(ctx context.Context) {
	p, ok := s.store.(store.WriteProber)
	if !ok {
		return
	}
	r := &s.ready
	r.mu.Lock()
	defer r.mu.Unlock() // one probe at a time; other checks wait for its outcome
	now := s.clock.Now()
	every := r.interval
	if r.probeFail {
		every = time.Second
	}
	if !r.probedAt.IsZero() && now.Sub(r.probedAt) < every {
		return
	}
	r.probedAt = now
	err := p.ProbeWrite(ctx)
	r.probeFail = err != nil
	if err != nil && ctx.Err() == nil {
		storefailure.Count(s.metrics.StoreErrors, "probe_write", err)
		s.log.WarnContext(ctx, "write probe failed", storefailure.Attrs(err)...)
	}
}
