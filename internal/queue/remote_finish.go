package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/trace"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/metrics"
	"github.com/docket-dev/docket/internal/store"
)

// RemoteOutcome is how a remote worker ended one attempt.
type RemoteOutcome struct {
	Lease string
	// Succeeded: Result is the task's result (JSON). Otherwise the attempt
	// failed with Failure.
	Succeeded bool
	Result    json.RawMessage
	Failure   RemoteFailure
}

// RemoteFailure is a remote attempt's failure.
type RemoteFailure struct {
	Code      dockettype.Code // lowercase snake case; any other becomes workflow_error
	Message   string          // for the task's own tenant; never logged
	Retryable bool            // queue it again with backoff while attempts remain
}

// RemoteEvidence is one evidence item a remote worker writes.
type RemoteEvidence struct {
	Lease string
	Kind  string
	Body  json.RawMessage
}

// FinishRemote writes remote outcomes, each fenced by its lease, in one
// store transaction: a stale item is lease_lost and the others still
// apply. A retryable failure with attempts left queues the task again with
// the same backoff as in-process; a result over the server's bound fails
// the task with result_too_large. An item sent again after it committed
// (its answer was lost) is ok; one whose lease already ended with another
// outcome is conflict.
func (s *Service) FinishRemote(ctx context.Context, w *RemoteWorker, items []RemoteOutcome) ([]LeaseStatus, error) {
	if len(items) > MaxFinishItems {
		return nil, dockettype.NewError(dockettype.CodeInvalidRequest, fmt.Sprintf("at most %d items per call", MaxFinishItems))
	}
	st, key, err := s.remote(ctx)
	if err != nil {
		return nil, err
	}
	tokens := make([]string, len(items))
	for i, it := range items {
		tokens[i] = it.Lease
	}
	checked, ok := s.verify(key, w, tokens)
	fitems := make([]store.FinishItem, 0, len(items))
	index := make([]int, 0, len(items)) // fitems[j] is items[index[j]]
	for i, it := range items {
		if !ok[i] {
			continue
		}
		fitems = append(fitems, s.remoteFinishItem(checked[i], &it))
		index = append(index, i)
	}
	return s.writeRemote(ctx, st, "finish", len(items), checked, ok, fitems, index)
}

// ReleaseRemote hands leases back: each task is queued again at once with
// a shutdown event, its attempt not charged.
func (s *Service) ReleaseRemote(ctx context.Context, w *RemoteWorker, tokens []string) ([]LeaseStatus, error) {
	if len(tokens) > MaxHeartbeatLeases {
		return nil, dockettype.NewError(dockettype.CodeInvalidRequest, fmt.Sprintf("at most %d leases per call", MaxHeartbeatLeases))
	}
	st, key, err := s.remote(ctx)
	if err != nil {
		return nil, err
	}
	checked, ok := s.verify(key, w, tokens)
	var (
		fitems []store.FinishItem
		index  []int
	)
	for i := range tokens {
		if ok[i] {
			fitems = append(fitems, store.FinishItem{Lease: checked[i].lease(), Kind: store.FinishRelease, Code: dockettype.CodeShutdown})
			index = append(index, i)
		}
	}
	return s.writeRemote(ctx, st, "release", len(tokens), checked, ok, fitems, index)
}

// remoteFinishItem decides what one remote outcome writes.
func (s *Service) remoteFinishItem(v verified, it *RemoteOutcome) store.FinishItem {
	fi := store.FinishItem{Lease: v.lease()}
	if it.Succeeded {
		result := it.Result
		if len(result) == 0 {
			result = json.RawMessage("null")
		}
		if len(result) > s.cfg.MaxResultBytes {
			fi.Kind, fi.Code = store.FinishFail, dockettype.CodeResultTooLarge
			fi.Message = fmt.Sprintf("the result of %d bytes is over the %d-byte limit", len(result), s.cfg.MaxResultBytes)
			return fi
		}
		fi.Kind, fi.Result = store.FinishSucceed, result
		return fi
	}
	code := it.Failure.Code
	if !validWorkflowCode(code) {
		code = dockettype.CodeWorkflowError
	}
	fi.Code = code
	fi.Message = cleanMessage(it.Failure.Message)
	if fi.Message == "" {
		fi.Message = failureMessage(code, &dockettype.Failure{Code: code})
	}
	if it.Failure.Retryable && v.claims.Attempt < v.claims.MaxAttempts {
		fi.Kind = store.FinishRetry
		fi.RunAfter = s.clock.Now().Add(retryBackoff(s.cfg.RetryBackoffBase, s.cfg.RetryBackoffMax, v.claims.Attempt))
	} else {
		fi.Kind = store.FinishFail
	}
	return fi
}

// writeRemote applies fitems (from the valid tokens; index maps them back
// to the n items of the call) and answers per item.
func (s *Service) writeRemote(ctx context.Context, st remoteStore, op string, n int,
	checked []verified, ok []bool, fitems []store.FinishItem, index []int) ([]LeaseStatus, error) {
	out := make([]LeaseStatus, n)
	for i := range out {
		if !ok[i] {
			out[i] = LeaseLost
		}
	}
	if len(fitems) == 0 {
		return out, nil
	}
	qctx, cancel := context.WithTimeout(ctx, s.cfg.QueryTimeout)
	start := s.clock.Now()
	res, err := st.Finish(qctx, &store.FinishParams{Now: start, Items: fitems})
	cancel()
	if err != nil {
		return nil, s.storeFailure(ctx, op, err)
	}
	if s.spans.on {
		now, link := s.clock.Now(), trace.SpanContextFromContext(ctx)
		b := newEndedBatch(len(res), 4)
		for j, r := range res {
			c := checked[index[j]].claims
			s.spans.finish(b, finishTask{traceID: c.TraceID, attempt: c.Attempt, unsampled: c.TraceUnsampled},
				&fitems[j], start, now, r.Applied, r.State, link)
		}
		s.spans.write(b)
	}
	for j, r := range res {
		i, fi := index[j], fitems[j]
		if !r.Applied {
			out[i] = s.settled(ctx, st, checked[i], fi)
			continue
		}
		out[i] = LeaseOK
		pool := checked[i].claims.Pool
		switch fi.Kind {
		case store.FinishRetry:
			s.metrics.Retries.WithLabelValues(pool, metrics.CodeLabel(fi.Code)).Inc()
		case store.FinishRelease:
			s.metrics.LeasesReleased.WithLabelValues(pool).Inc()
		default:
			s.metrics.TerminalOutcomes.WithLabelValues(pool, string(r.State)).Inc()
			s.waiters.notify(fi.TaskID)
			if r.State == dockettype.StateFailed {
				s.log.InfoContext(ctx, "task failed", "code", metrics.CodeLabel(fi.Code), "task_id", fi.TaskID,
					"tenant", checked[i].claims.Tenant, "remote", true)
			}
		}
	}
	return out, nil
}

// settled answers a fenced item: ok when this very outcome committed
// earlier (the worker retries a call whose answer it lost), conflict when
// another outcome ended the same lease, lease_lost otherwise (cancelled,
// timed out, recovered, claimed again).
func (s *Service) settled(ctx context.Context, st remoteStore, v verified, fi store.FinishItem) LeaseStatus {
	s.metrics.FencingRejections.WithLabelValues("remote_finish").Inc()
	qctx, cancel := context.WithTimeout(ctx, s.cfg.QueryTimeout)
	task, err := st.GetTask(qctx, &store.GetTaskParams{Tenant: v.claims.Tenant, TaskID: v.claims.TaskID})
	cancel()
	if err != nil || task.LeaseEpoch != v.claims.Epoch {
		return LeaseLost
	}
	var want dockettype.State
	switch fi.Kind {
	case store.FinishSucceed:
		want = dockettype.StateSucceeded
	case store.FinishFail:
		want = dockettype.StateFailed
	default: // a retry or a release left the task queued under the same epoch
		want = dockettype.StateQueued
	}
	switch {
	case task.State == want:
		return LeaseOK
	case fi.Kind == store.FinishRelease:
		return LeaseLost // nothing to hand back: the lease already ended
	case task.State == dockettype.StateSucceeded || task.State == dockettype.StateFailed:
		return LeaseConflict // this lease already ended with another outcome
	}
	return LeaseLost
}

// WriteRemoteEvidence appends evidence under each item's lease, fenced like
// a result: lease_lost for a stale lease.
func (s *Service) WriteRemoteEvidence(ctx context.Context, w *RemoteWorker, items []RemoteEvidence) ([]LeaseStatus, error) {
	if len(items) > MaxFinishItems {
		return nil, dockettype.NewError(dockettype.CodeInvalidRequest, fmt.Sprintf("at most %d items per call", MaxFinishItems))
	}
	st, key, err := s.remote(ctx)
	if err != nil {
		return nil, err
	}
	tokens := make([]string, len(items))
	for i, it := range items {
		if it.Kind == "" || len(it.Kind) > 64 {
			return nil, dockettype.NewError(dockettype.CodeInvalidRequest, "each evidence item needs a kind of 1 to 64 bytes")
		}
		tokens[i] = it.Lease
	}
	checked, ok := s.verify(key, w, tokens)
	out := make([]LeaseStatus, len(items))
	// One fenced write per lease, its items in order.
	byLease := map[store.Lease][]int{}
	var order []store.Lease
	for i := range items {
		if !ok[i] {
			out[i] = LeaseLost
			continue
		}
		l := checked[i].lease()
		if _, seen := byLease[l]; !seen {
			order = append(order, l)
		}
		byLease[l] = append(byLease[l], i)
	}
	for _, l := range order {
		idx := byLease[l]
		ev := make([]store.EvidenceItem, len(idx))
		for k, i := range idx {
			ev[k] = store.EvidenceItem{Kind: items[i].Kind, Body: items[i].Body}
		}
		qctx, cancel := context.WithTimeout(ctx, s.cfg.QueryTimeout)
		err := st.AppendEvidence(qctx, &store.AppendEvidenceParams{Now: s.clock.Now(), Lease: l, Items: ev})
		cancel()
		status := LeaseOK
		switch {
		case err == nil:
		case errors.Is(err, store.ErrStaleLease):
			s.metrics.FencingRejections.WithLabelValues("remote_evidence").Inc()
			status = LeaseLost
		default:
			return nil, s.storeFailure(ctx, "append_evidence", err)
		}
		for _, i := range idx {
			out[i] = status
		}
	}
	return out, nil
}
