package httpapi_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/httpapi"
	"github.com/docket-dev/docket/internal/httpapi/httpapitest"
)

// FuzzDecodeBatch: the batch decoder never panics; it refuses the whole
// body with invalid_request, or returns 1 to MaxBatchItems tasks of a
// JSON object whose only member is "tasks", each decoded alone: refused
// with invalid_request or payload_too_large, or a request with a valid
// idempotency key and a workflow.
func FuzzDecodeBatch(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte) {
		reqs, errs, err := httpapi.DecodeBatch(body)
		if err != nil {
			if c := codeOf(t, err); c != dockettype.CodeInvalidRequest {
				t.Fatalf("code %q, want invalid_request", c)
			}
			return
		}
		var top map[string]json.RawMessage
		if err := json.Unmarshal(body, &top); err != nil || len(top) != 1 || top["tasks"] == nil {
			t.Fatalf("accepted a body that is not {\"tasks\": [...]}: %v", err)
		}
		if len(reqs) < 1 || len(reqs) > httpapi.MaxBatchItems || len(errs) != len(reqs) {
			t.Fatalf("%d tasks, %d errors", len(reqs), len(errs))
		}
		for i, err := range errs {
			if err != nil {
				if c := codeOf(t, err); c != dockettype.CodeInvalidRequest && c != dockettype.CodePayloadTooLarge {
					t.Fatalf("task %d refused with %q", i, c)
				}
				continue
			}
			if r := reqs[i]; r.Workflow == "" || !validKey(r.IdempotencyKey) || r.TimeoutMS < 0 {
				t.Fatalf("task %d accepted as %+v", i, r)
			}
		}
	})
}

// validKey is the documented form of an idempotency key: 1 to 255
// visible ASCII characters.
func validKey(k string) bool {
	if len(k) < 1 || len(k) > 255 {
		return false
	}
	for _, c := range []byte(k) {
		if c <= ' ' || c > '~' {
			return false
		}
	}
	return true
}

// FuzzSubmitBatch sends any body to POST /v1/tasks/batch of a real stack.
// The answer is never 5xx. A body the decoder refuses is refused whole
// with the decoder's code; otherwise the answer is 200 with one result per
// task, in order: the decoder's refusal of that task, the queue's
// documented refusal, or a task of the caller's tenant (201, or 200 and
// 409 for a key used before). No log line quotes the request.
func FuzzSubmitBatch(f *testing.F) {
	srv, stack := newStackServer(f, httpapitest.Options{Queue: fuzzQueue})
	cfg := stack.Service.Config()
	f.Fuzz(func(t *testing.T, body []byte) {
		r := newRequest(t, http.MethodPost, "/v1/tasks/batch", "", body)
		r.Header.Set("Authorization", "Bearer "+stack.Key)
		a := srv.serve(t, r)
		code := checkAnswer(t, a)
		reqs, errs, err := httpapi.DecodeBatch(body)
		if err != nil {
			wantCode(t, a, code, codeOf(t, err))
			return
		}
		if a.status != http.StatusOK {
			t.Fatalf("status %d for a batch the decoder accepts: %s", a.status, a.body)
		}
		var ans batchAnswer
		if err := json.Unmarshal(a.body, &ans); err != nil || len(ans.Results) != len(reqs) {
			t.Fatalf("%d results for %d tasks (%v): %.500s", len(ans.Results), len(reqs), err, a.body)
		}
		traceID := traceparentRE.FindStringSubmatch(a.header.Get("traceparent"))[1]
		for i, res := range ans.Results {
			var want dockettype.Code
			if errs[i] != nil {
				want = codeOf(t, errs[i])
			} else {
				want = admissionCode(cfg, reqs[i])
			}
			checkBatchResult(t, i, res.Status, res.Task, (*errorDetail)(res.Error), want, traceID)
			if res.Task != nil && res.Status == http.StatusCreated {
				checkAdmitted(t, cfg, res.Task, reqs[i])
			}
			if res.Task != nil && (errs[i] != nil || res.Task.Tenant != httpapitest.Tenant || res.Task.Workflow != reqs[i].Workflow) {
				t.Fatalf("task %d answered with %+v for %+v", i, res.Task, reqs[i])
			}
		}
	})
}

// checkBatchResult checks one result: an error with the wanted code and
// its status, or (want "") a task, new or replayed, or a conflict with an
// earlier use of the key.
func checkBatchResult(t *testing.T, i, status int, task *dockettype.Task, e *errorDetail, want dockettype.Code, traceID string) {
	t.Helper()
	if e != nil {
		if wantStatus, ok := httpapi.StatusOf(e.Code); !ok || status != wantStatus || e.Message == "" || e.TraceID != traceID || task != nil {
			t.Fatalf("task %d: status %d with error %+v and task %v", i, status, e, task)
		}
		if e.Code == want || want == "" && e.Code == dockettype.CodeIdempotencyConflict {
			return
		}
		t.Fatalf("task %d refused with %q, want %q", i, e.Code, want)
	}
	if want != "" || task == nil || status != http.StatusCreated && status != http.StatusOK {
		t.Fatalf("task %d: status %d, task %v; want code %q", i, status, task, want)
	}
}
