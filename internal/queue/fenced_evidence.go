package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/metrics"
	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/storefailure"
)

// evidenceAppender is the store call evidence writes make.
type evidenceAppender interface {
	AppendEvidence(ctx context.Context, params *store.AppendEvidenceParams) error
}

// fencedEvidence is the EvidenceWriter a workflow gets: it writes evidence
// under one attempt's lease, so a worker that lost its lease writes none.
type fencedEvidence struct {
	baseService
	store        evidenceAppender
	metrics      *metrics.Metrics
	lease        store.Lease
	queryTimeout time.Duration
}

func newFencedEvidence(base baseService, st evidenceAppender, m *metrics.Metrics, lease store.Lease, queryTimeout time.Duration) *fencedEvidence {
	return &fencedEvidence{baseService: base, store: st, metrics: m, lease: lease, queryTimeout: queryTimeout}
}

func (e *fencedEvidence) WriteEvidence(ctx context.Context, items []dockettype.EvidenceItem) error {
	params := &store.AppendEvidenceParams{Now: e.clock.Now(), Lease: e.lease}
	for _, it := range items {
		if !json.Valid(it.Body) {
			return fmt.Errorf("evidence %q: body is not valid JSON", it.Kind)
		}
		params.Items = append(params.Items, store.EvidenceItem{Kind: it.Kind, Body: it.Body})
	}
	qctx, cancel := context.WithTimeout(ctx, e.queryTimeout)
	defer cancel()
	err := e.store.AppendEvidence(qctx, params)
	switch {
	case errors.Is(err, store.ErrStaleLease):
		e.metrics.FencingRejections.WithLabelValues("evidence").Inc()
		e.log.WarnContext(ctx, "evidence write fenced", "code", dockettype.CodeStaleLease, "task_id", e.lease.TaskID)
		// Both sentinels match: the public one for workflow code, the
		// store's for the worker's classification.
		return fmt.Errorf("write evidence: %w: %w", dockettype.ErrLeaseLost, store.ErrStaleLease)
	case err != nil:
		storefailure.Count(e.metrics.StoreErrors, "append_evidence", err)
		e.log.WarnContext(ctx, "evidence write failed", append(storefailure.Attrs(err), "task_id", e.lease.TaskID)...)
		return fmt.Errorf("write evidence: %w: %w", dockettype.ErrEvidenceUnavailable, store.ErrUnavailable)
	}
	return nil
}
