package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/queue"
)

// batchFields are the members of a batch body.
var batchFields = map[string]bool{"tasks": true}

// batchItemFields are a submission's members plus its idempotency key,
// which a single submission sends as a header.
var batchItemFields = func() map[string]bool {
	m := map[string]bool{"idempotency_key": true}
	for f := range submitFields {
		m[f] = true
	}
	return m
}()

// batchBody is the answer of POST /v1/tasks/batch.
type batchBody struct {
	Results []batchResult `json:"results"`
}

// batchResult answers one item: the status a single submission would have
// had, and its task or its error.
type batchResult struct {
	Status int              `json:"status"`
	Task   *dockettype.Task `json:"task,omitempty"`
	Error  *errorDetail     `json:"error,omitempty"`
}

// submitBatch serves POST /v1/tasks/batch: 200 with one result per task,
// in order. A malformed body, or one with no task or more than
// MaxBatchItems, is refused whole; an invalid task is refused alone.
func (s *server) submitBatch(w http.ResponseWriter, r *http.Request, p dockettype.Principal) {
	if _, err := queryParams(r); err != nil {
		writeError(w, r, err)
		return
	}
	if err := checkJSONContentType(r); err != nil {
		writeError(w, r, err)
		return
	}
	body, err := s.readBodyUpTo(w, r, s.maxBatchBody)
	if err != nil {
		writeError(w, r, err)
		return
	}
	items, err := decodeBatch(body)
	if err != nil {
		writeError(w, r, err)
		return
	}
	traceID := infoFrom(r.Context()).traceID
	results := make([]batchResult, len(items))
	reqs := make([]*queue.SubmitRequest, 0, len(items))
	at := make([]int, 0, len(items)) // at[j]: the item index of reqs[j]
	for i, item := range items {
		req, err := s.decodeBatchItem(item)
		if err != nil {
			de, ok := errors.AsType[*dockettype.Error](err)
			if !ok {
				de = dockettype.NewError(dockettype.CodeInternal, "")
			}
			results[i] = itemError(de, traceID)
			continue
		}
		req.TraceID = traceID
		reqs = append(reqs, req)
		at = append(at, i)
	}
	var retryAfter time.Duration
	if len(reqs) > 0 {
		res, err := s.exec.SubmitBatch(r.Context(), p, reqs)
		if err != nil {
			writeError(w, r, err)
			return
		}
		if len(res) != len(reqs) {
			writeError(w, r, dockettype.NewError(dockettype.CodeInternal, ""))
			return
		}
		for j, rr := range res {
			switch {
			case rr.Err != nil:
				results[at[j]] = itemError(rr.Err, traceID)
				if rr.Err.RetryAfter > 0 && statusOf[rr.Err.Code] == http.StatusTooManyRequests {
					retryAfter = max(retryAfter, rr.Err.RetryAfter)
				}
			case rr.Task == nil:
				writeError(w, r, dockettype.NewError(dockettype.CodeInternal, ""))
				return
			case rr.Replayed:
				results[at[j]] = batchResult{Status: http.StatusOK, Task: rr.Task}
			default:
				results[at[j]] = batchResult{Status: http.StatusCreated, Task: rr.Task}
			}
		}
	}
	if retryAfter > 0 {
		// A hint for the items refused with 429; the answer itself is 200.
		w.Header().Set("Retry-After", strconv.FormatInt(retryAfterSeconds(&dockettype.Error{RetryAfter: retryAfter}), 10))
	}
	writeJSON(w, r, http.StatusOK, batchBody{Results: results})
}

// itemError is the result of a refused item. Codes the API does not answer
// with become internal, as in writeError.
func itemError(e *dockettype.Error, traceID string) batchResult {
	status, ok := statusOf[e.Code]
	if !ok {
		return batchResult{Status: http.StatusInternalServerError,
			Error: &errorDetail{Code: dockettype.CodeInternal, Message: internalMessage, TraceID: traceID}}
	}
	return batchResult{Status: status, Error: &errorDetail{Code: e.Code, Message: e.Message, TraceID: traceID}}
}

// decodeBatch decodes a batch body strictly: one JSON object whose only
// member is "tasks", an array of 1 to MaxBatchItems elements. The elements
// are decoded one by one (decodeBatchItem), so that a bad one is refused
// alone.
func decodeBatch(body []byte) ([]json.RawMessage, error) {
	if !utf8.Valid(body) {
		return nil, invalidRequest("the request body must be UTF-8 JSON")
	}
	raw, err := decodeObject(body, batchFields, "the request body")
	if err != nil {
		return nil, err
	}
	countMsg := fmt.Sprintf(`"tasks" must be an array of 1 to %d tasks`, MaxBatchItems)
	v, ok := raw["tasks"]
	if !ok {
		return nil, invalidRequest(countMsg)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(v, &items); err != nil || len(items) == 0 || len(items) > MaxBatchItems {
		return nil, invalidRequest(countMsg)
	}
	return items, nil
}

// decodeBatchItem decodes one task of a batch like a single submission
// body, plus its "idempotency_key". Each task is bounded like a single
// submission body.
func (s *server) decodeBatchItem(item json.RawMessage) (*queue.SubmitRequest, error) {
	if int64(len(item)) > s.maxBody {
		return nil, dockettype.NewError(dockettype.CodePayloadTooLarge, fmt.Sprintf("the task is over %d bytes", s.maxBody))
	}
	raw, err := decodeObject(item, batchItemFields, "the task")
	if err != nil {
		return nil, err
	}
	keyMsg := `"idempotency_key" is required: 1 to 255 visible ASCII characters`
	var key string
	if v, ok := raw["idempotency_key"]; !ok || json.Unmarshal(v, &key) != nil || queue.ValidIdempotencyKey(key) != nil {
		return nil, invalidRequest(keyMsg)
	}
	req, err := submissionOf(raw, s.maxTimeout)
	if err != nil {
		return nil, err
	}
	req.IdempotencyKey = key
	return req, nil
}
