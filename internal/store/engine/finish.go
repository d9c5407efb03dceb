package engine

import (
	"context"
	"fmt"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// Finish applies a batch of attempt outcomes, each fenced by its lease, in
// one transaction; see store.Finisher. A stale item (and a second outcome
// for the same lease in the batch) is refused without affecting the others.
func (s *Store) Finish(ctx context.Context, p *store.FinishParams) ([]store.FinishResult, error) {
	for _, it := range p.Items {
		switch it.Kind {
		case store.FinishSucceed, store.FinishFail, store.FinishRetry, store.FinishRelease:
		default:
			return nil, invalid("finish", fmt.Sprintf("kind %d", it.Kind))
		}
		if it.TaskID == "" {
			return nil, invalid("finish", "task ID is required")
		}
	}
	if len(p.Items) == 0 {
		return []store.FinishResult{}, nil
	}
	var out []store.FinishResult
	err := s.b.Write(ctx, "finish", func(tx Tx) error {
		var err error
		out, err = finish(tx, p)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func finish(tx Tx, p *store.FinishParams) ([]store.FinishResult, error) {
	if err := tx.LockLive(taskIDs(p.Items, func(it store.FinishItem) string { return it.TaskID })); err != nil {
		return nil, err
	}
	// One outcome per task: a second item for the same task is stale.
	first := map[string]int{}
	var ends []End
	var requeues []Requeue
	for i, it := range p.Items {
		if _, dup := first[it.TaskID]; dup {
			continue
		}
		first[it.TaskID] = i
		switch it.Kind {
		case store.FinishSucceed:
			result := it.Result
			ends = append(ends, End{TaskID: it.TaskID, Epoch: it.Epoch, From: dockettype.StateRunning,
				To: dockettype.StateSucceeded, Result: result})
		case store.FinishFail:
			ends = append(ends, End{TaskID: it.TaskID, Epoch: it.Epoch, From: dockettype.StateRunning,
				To: dockettype.StateFailed, Code: it.Code, Message: it.Message})
		case store.FinishRetry:
			requeues = append(requeues, Requeue{TaskID: it.TaskID, Epoch: it.Epoch, RunAfter: it.RunAfter,
				Code: it.Code, Message: it.Message})
		case store.FinishRelease:
			requeues = append(requeues, Requeue{TaskID: it.TaskID, Epoch: it.Epoch, Uncharge: true,
				Code: dockettype.CodeShutdown})
		}
	}
	c := newChanges()
	if h := p.HandOff; h != nil && h.Limit > 0 {
		h.Started = nil
		c.handOff = h
	}
	applied := map[string]dockettype.State{}
	if len(ends) > 0 {
		moved, err := tx.End(ends, p.Now)
		if err != nil {
			return nil, err
		}
		byID := make(map[string]End, len(ends))
		for _, e := range ends {
			byID[e.TaskID] = e
		}
		for _, m := range moved {
			e := byID[m.TaskID]
			c.ended(m, e.To, e.Code)
			c.stored(m.Tenant, int64(len(e.Result)))
			applied[m.TaskID] = e.To
		}
		if err := settleDependents(tx, c, endedOf(moved, func(m Moved) dockettype.State { return byID[m.TaskID].To }), p.Now); err != nil {
			return nil, err
		}
	}
	if len(requeues) > 0 {
		moved, err := tx.Requeue(requeues, p.Now)
		if err != nil {
			return nil, err
		}
		byID := make(map[string]Requeue, len(requeues))
		for _, r := range requeues {
			byID[r.TaskID] = r
		}
		for _, m := range moved {
			c.requeued(m, byID[m.TaskID].Code)
			applied[m.TaskID] = dockettype.StateQueued
		}
	}
	if err := c.flush(tx, p.Now); err != nil {
		return nil, err
	}

	out := make([]store.FinishResult, len(p.Items))
	var stale []string
	for i, it := range p.Items {
		if st, ok := applied[it.TaskID]; ok && first[it.TaskID] == i {
			out[i] = store.FinishResult{Applied: true, State: st}
			continue
		}
		stale = append(stale, it.TaskID)
	}
	if len(stale) == 0 {
		return out, nil
	}
	states, err := tx.States(stale)
	if err != nil {
		return nil, err
	}
	for i, it := range p.Items {
		if !out[i].Applied {
			out[i].State = states[it.TaskID]
		}
	}
	return out, nil
}

// Heartbeat extends each current lease; see store.LeaseKeeper.
func (s *Store) Heartbeat(ctx context.Context, p *store.HeartbeatParams) ([]store.RefusedLease, error) {
	if len(p.Leases) == 0 {
		return nil, nil
	}
	if p.LeaseTTL <= 0 {
		return nil, invalid("heartbeat", "lease TTL is required")
	}
	var refused []store.RefusedLease
	err := s.b.Write(ctx, "heartbeat", func(tx Tx) error {
		refused = nil
		if err := tx.LockLive(taskIDs(p.Leases, func(l store.Lease) string { return l.TaskID })); err != nil {
			return err
		}
		renewed, err := tx.Renew(p.Leases, p.Now.Add(p.LeaseTTL))
		if err != nil {
			return err
		}
		held := make(map[store.Lease]bool, len(renewed))
		for _, l := range renewed {
			held[l] = true
		}
		var ids []string
		for _, l := range p.Leases {
			if !held[l] {
				refused = append(refused, store.RefusedLease{Lease: l})
				ids = append(ids, l.TaskID)
			}
		}
		if len(ids) == 0 {
			return nil
		}
		states, err := tx.States(ids)
		if err != nil {
			return err
		}
		for i := range refused {
			refused[i].State = states[refused[i].TaskID]
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return refused, nil
}

// AppendEvidence records evidence if the lease is still current. The task
// row is share-locked while the evidence is written, so a cancel, timeout
// or recovery cannot commit in between: evidence is never written after the
// lease it names has ended.
func (s *Store) AppendEvidence(ctx context.Context, p *store.AppendEvidenceParams) error {
	for _, it := range p.Items {
		if it.Kind == "" {
			return invalid("append_evidence", "evidence kind is required")
		}
	}
	items := make([]store.EvidenceItem, len(p.Items))
	for i, it := range p.Items {
		items[i] = it
		if items[i].Body == nil {
			items[i].Body = []byte("null") // as admission stores a nil input
		}
	}
	var bytes int64
	for _, it := range items {
		bytes += int64(len(it.Body))
	}
	return s.b.Write(ctx, "append_evidence", func(tx Tx) error {
		attempt, tenant, ok, err := tx.LeaseAttempt(p.Lease)
		if err != nil {
			return err
		}
		if !ok {
			return store.ErrStaleLease
		}
		if len(items) == 0 {
			return nil
		}
		if err := tx.InsertEvidence(p.Lease, attempt, items, p.Now); err != nil {
			return err
		}
		// Counted, never refused: the storage quota gates admission (see
		// docs/limits.md).
		c := newChanges()
		c.stored(tenant, bytes)
		return c.flush(tx, p.Now)
	})
}
