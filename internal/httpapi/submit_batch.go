package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	if err := s.reserveBody(r, s.maxBatchBody); err != nil {
		writeError(w, r, err)
		return
	}
	decoded, itemErrs, err := s.decodeBatch(http.MaxBytesReader(w, r.Body, s.maxBatchBody), s.maxBatchBody)
	if err != nil {
		writeError(w, r, err)
		return
	}
	traceID := infoFrom(r.Context()).traceID
	results := make([]batchResult, len(decoded))
	reqs := make([]*queue.SubmitRequest, 0, len(decoded))
	at := make([]int, 0, len(decoded)) // at[j]: the item index of reqs[j]
	for i, req := range decoded {
		if err := itemErrs[i]; err != nil {
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

// maxJSONDepth is encoding/json's bound on nesting; a batch item sits two
// levels down ({"tasks": [item]}), so an item may nest two less.
const maxJSONDepth = 10000

// decodeBatch decodes a batch body strictly, as it arrives: one JSON
// object whose only member is "tasks", an array of 1 to MaxBatchItems
// elements, nothing after it. Each element is decoded (decodeBatchItem)
// as soon as it is read, and only its request is kept, so that the body is
// never held whole, nor twice: per element, its request or its error (a
// bad element is refused alone). The error concerns the whole body; body
// is bounded by limit (an http.MaxBytesReader), so that a read error says
// which.
func (s *server) decodeBatch(body io.Reader, limit int64) ([]*queue.SubmitRequest, []error, error) {
	rd := &readErr{r: body}
	reqs, errs, err := s.decodeBatchStream(rd)
	if err != nil && rd.err != nil {
		return nil, nil, s.bodyReadError(rd.err, limit)
	}
	return reqs, errs, err
}

func (s *server) decodeBatchStream(body io.Reader) ([]*queue.SubmitRequest, []error, error) {
	const what = "the request body"
	countMsg := fmt.Sprintf(`"tasks" must be an array of 1 to %d tasks`, MaxBatchItems)
	notJSON := invalidRequest(what + " is not valid JSON")
	dec := json.NewDecoder(body)
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, nil, invalidRequest(what + " must be a JSON object")
	}
	var reqs []*queue.SubmitRequest
	var errs []error
	seen := false
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, notJSON
		}
		name, _ := tok.(string)
		if !batchFields[name] {
			return nil, nil, invalidRequest(unknownFieldMessage(name))
		}
		if seen {
			return nil, nil, invalidRequest(fmt.Sprintf("field %q appears more than once", name))
		}
		seen = true
		if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
			if err != nil {
				return nil, nil, notJSON
			}
			return nil, nil, invalidRequest(countMsg)
		}
		for dec.More() {
			if len(reqs) == MaxBatchItems {
				return nil, nil, invalidRequest(countMsg)
			}
			var item json.RawMessage
			if err := dec.Decode(&item); err != nil {
				return nil, nil, notJSON
			}
			if !utf8.Valid(item) {
				return nil, nil, invalidRequest(what + " must be UTF-8 JSON")
			}
			if nestingDepth(item) > maxJSONDepth-2 {
				return nil, nil, notJSON
			}
			req, err := s.decodeBatchItem(item)
			reqs, errs = append(reqs, req), append(errs, err)
		}
		if tok, err := dec.Token(); err != nil || tok != json.Delim(']') {
			return nil, nil, notJSON
		}
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, nil, notJSON
	}
	if _, err := dec.Token(); err != io.EOF {
		if _, syntax := err.(*json.SyntaxError); syntax || err == nil {
			return nil, nil, invalidRequest("unexpected data after the JSON object")
		}
		return nil, nil, notJSON // a read error: decodeBatch names it
	}
	if len(reqs) == 0 {
		return nil, nil, invalidRequest(countMsg)
	}
	return reqs, errs, nil
}

// readErr remembers the first error of a read other than io.EOF: the
// decoder reports a failed read as a syntax error or an unexpected end.
type readErr struct {
	r   io.Reader
	err error
}

func (r *readErr) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && err != io.EOF && r.err == nil {
		r.err = err
	}
	return n, err
}

// nestingDepth is the deepest nesting of arrays and objects in data, valid
// JSON.
func nestingDepth(data []byte) int {
	depth, deepest, inString := 0, 0, false
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch {
		case inString:
			switch c {
			case '\\':
				i++ // the escaped byte
			case '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
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
