package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/docket-dev/docket/dockettype"
)

// MaxBatchItems is the most tasks one SubmitBatch may carry.
const MaxBatchItems = 1000

// SubmitBatchParams is one batch of submissions.
type SubmitBatchParams struct {
	// Tasks are 1 to MaxBatchItems submissions, each with its own
	// IdempotencyKey. Their TraceParent must be empty: a batch is one
	// request and has one, below.
	Tasks []*SubmitParams
	// TraceParent, when set, is sent as the W3C traceparent header; every
	// task the batch admits records its trace ID.
	TraceParent string
}

// BatchResult is the answer to one task of a batch.
type BatchResult struct {
	// Status is the HTTP status a single submission would have had: 201
	// new task, 200 replay, 409 idempotency_conflict, 429 queue_full,
	// tenant_quota_exceeded or storage_quota_exceeded, 400 invalid_request
	// or unknown_workflow, 413
	// payload_too_large (the task is over the server's body limit).
	Status int
	// Task is the admitted task (201), or the earlier one (200).
	Task *dockettype.Task
	// Replayed is true when an earlier submission with the same key and
	// parameters made the task (Status 200).
	Replayed bool
	// Err is the task's refusal when Status is not 201 or 200. For 429 its
	// RetryAfter is the batch answer's Retry-After.
	Err *Error
}

// batchItem is one task of the JSON body of POST /v1/tasks/batch.
type batchItem struct {
	IdempotencyKey string `json:"idempotency_key"`
	submitBody
}

// SubmitBatch submits up to MaxBatchItems tasks in one request and returns
// one result per task, in order. Each task is admitted or refused on its
// own, like a single Submit; the batch is admitted in one transaction, so
// when SubmitBatch returns an error (for example 503 store_unavailable)
// nothing of it was admitted. A malformed batch, or one with no task or
// more than MaxBatchItems, is a 400 *Error. Retrying the same batch is safe:
// admitted tasks are replayed (Status 200).
func (c *Client) SubmitBatch(ctx context.Context, p *SubmitBatchParams) ([]BatchResult, error) {
	if p == nil {
		return nil, errors.New("docket: submit batch: params are required")
	}
	items := make([]batchItem, len(p.Tasks))
	for i, t := range p.Tasks {
		if t == nil {
			return nil, fmt.Errorf("docket: submit batch: task %d is nil", i)
		}
		if t.TraceParent != "" {
			return nil, fmt.Errorf("docket: submit batch: task %d sets TraceParent; set SubmitBatchParams.TraceParent", i)
		}
		items[i] = batchItem{IdempotencyKey: t.IdempotencyKey, submitBody: submitBody{
			Workflow: t.Workflow, Input: t.Input, Pool: t.Pool,
			TimeoutMS: t.TimeoutMS, Priority: t.Priority, MaxAttempts: t.MaxAttempts, RunAt: runAt(t.RunAt),
			DependsOn: t.DependsOn, OnDepFail: t.OnDependencyFailure,
			ConcurrencyKey: t.ConcurrencyKey,
		}}
	}
	body, err := json.Marshal(struct {
		Tasks []batchItem `json:"tasks"`
	}{items})
	if err != nil {
		return nil, fmt.Errorf("docket: submit batch: encode input: %w", err)
	}
	h := http.Header{}
	if p.TraceParent != "" {
		h.Set("traceparent", p.TraceParent)
	}
	var out struct {
		Results []struct {
			Status int              `json:"status"`
			Task   *dockettype.Task `json:"task"`
			Error  *struct {
				Code    string `json:"code"`
				Message string `json:"message"`
				TraceID string `json:"trace_id"`
			} `json:"error"`
		} `json:"results"`
	}
	resp, err := c.doResponse(ctx, http.MethodPost, "/v1/tasks/batch", nil, h, body, &out)
	if err != nil {
		return nil, err
	}
	if len(out.Results) != len(p.Tasks) {
		return nil, fmt.Errorf("docket: submit batch: %d results for %d tasks", len(out.Results), len(p.Tasks))
	}
	res := make([]BatchResult, len(out.Results))
	for i, r := range out.Results {
		res[i] = BatchResult{Status: r.Status, Task: r.Task, Replayed: r.Status == http.StatusOK}
		switch {
		case r.Status == http.StatusCreated || r.Status == http.StatusOK:
			if r.Task == nil {
				return nil, fmt.Errorf("docket: submit batch: result %d has status %d and no task", i, r.Status)
			}
		default:
			e := &Error{StatusCode: r.Status}
			if r.Error != nil {
				e.Code, e.Message, e.TraceID = r.Error.Code, r.Error.Message, r.Error.TraceID
			}
			if r.Status == http.StatusTooManyRequests {
				e.RetryAfter = retryAfter(resp.Header.Get("Retry-After"))
			}
			res[i].Task, res[i].Err = nil, e
		}
	}
	return res, nil
}
