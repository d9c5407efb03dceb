package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"mime"
	"net/http"
	"testing"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/httpapi"
	"github.com/docket-dev/docket/internal/httpapi/httpapitest"
	"github.com/docket-dev/docket/internal/queue"
)

// submitMembers are the members a submission may have.
var submitMembers = map[string]bool{"workflow": true, "input": true, "pool": true, "timeout_ms": true, "priority": true, "max_attempts": true}

// FuzzDecodeSubmission: the decoder never panics; it refuses with
// invalid_request, or it accepts a single JSON object with only the
// documented members, a workflow and a timeout within the bound, and what
// it accepts decodes again, re-encoded, to the same request.
func FuzzDecodeSubmission(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte) {
		const dayMS = int64(24 * time.Hour / time.Millisecond)
		req, err := httpapi.DecodeSubmission(body, time.Duration(math.MaxInt64))
		day, dayErr := httpapi.DecodeSubmission(body, 24*time.Hour)
		if err != nil {
			if c := codeOf(t, err); c != dockettype.CodeInvalidRequest {
				t.Fatalf("code %q, want invalid_request", c)
			}
			if dayErr == nil {
				t.Fatal("accepted under a lower timeout bound, refused under a higher one")
			}
			return
		}
		if dayErr != nil && req.TimeoutMS <= dayMS {
			t.Fatalf("timeout_ms %d refused under a 24h bound: %v", req.TimeoutMS, dayErr)
		}
		if dayErr == nil && day.TimeoutMS > dayMS {
			t.Fatalf("timeout_ms %d accepted under a 24h bound", day.TimeoutMS)
		}
		if !json.Valid(body) {
			t.Fatal("accepted a body that is not JSON")
		}
		var members map[string]json.RawMessage
		if err := json.Unmarshal(body, &members); err != nil || members == nil {
			t.Fatalf("accepted a body that is not a JSON object: %v", err)
		}
		for name := range members {
			if !submitMembers[name] {
				t.Fatalf("accepted member %q", name)
			}
		}
		if req.Workflow == "" || req.TimeoutMS < 0 {
			t.Fatalf("accepted %+v", req)
		}
		if req.Input != nil && !json.Valid(req.Input) {
			t.Fatalf("accepted an input that is not JSON: %q", req.Input)
		}
		// Re-encoded, the request decodes to itself.
		again, err := httpapi.DecodeSubmission(encodeSubmission(t, req), time.Duration(math.MaxInt64))
		if err != nil {
			t.Fatalf("the re-encoded request is refused: %v", err)
		}
		again.Input, req.Input = compact(t, again.Input), compact(t, req.Input)
		if fmt.Sprintf("%+v", again) != fmt.Sprintf("%+v", req) {
			t.Fatalf("round trip: %+v, want %+v", again, req)
		}
	})
}

// compact removes insignificant whitespace from JSON (the decoder keeps
// the input as sent).
func compact(t *testing.T, raw []byte) []byte {
	t.Helper()
	if raw == nil {
		return nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// encodeSubmission encodes a decoded request back into a body.
func encodeSubmission(t *testing.T, req *queue.SubmitRequest) []byte {
	t.Helper()
	m := map[string]any{"workflow": req.Workflow, "timeout_ms": req.TimeoutMS, "priority": req.Priority, "max_attempts": req.MaxAttempts}
	if req.Pool != "" {
		m["pool"] = req.Pool
	}
	if req.Input != nil {
		m["input"] = req.Input
	}
	// Without HTML escaping: the input goes back as sent, not with "&"
	// spelled "\u0026".
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// FuzzSubmit sends any body and Content-Type to POST /v1/tasks of a real
// stack (SQLite, queue, keys), with an idempotency key that carries the
// canary. The answer is never 5xx; it is what the decoder and the queue's
// documented bounds say: 413 over 1 MiB, the decoder's refusal, the
// queue's refusal (invalid_request, unknown_workflow), or 201 with a task
// of the caller's tenant that matches the request. No log line quotes
// the request.
func FuzzSubmit(f *testing.F) {
	srv, stack := newStackServer(f, httpapitest.Options{Queue: fuzzQueue})
	cfg := stack.Service.Config()
	f.Fuzz(func(t *testing.T, body []byte, contentType string) {
		key := fmt.Sprintf("%s-%d", canary, srv.next())
		r := newRequest(t, http.MethodPost, "/v1/tasks", "", body)
		r.Header.Set("Authorization", "Bearer "+stack.Key)
		r.Header.Set("Idempotency-Key", key)
		if contentType != "" {
			r.Header.Set("Content-Type", contentType)
		}
		a := srv.serve(t, r)
		code := checkAnswer(t, a)

		if mt, _, err := mime.ParseMediaType(contentType); contentType != "" && (err != nil || mt != "application/json") {
			wantCode(t, a, code, dockettype.CodeInvalidRequest)
			return
		}
		if len(body) > int(httpapi.DefaultMaxBodyBytes) {
			wantCode(t, a, code, dockettype.CodePayloadTooLarge)
			return
		}
		req, err := httpapi.DecodeSubmission(body, time.Duration(math.MaxInt64))
		if err != nil {
			wantCode(t, a, code, codeOf(t, err))
			return
		}
		wantCode(t, a, code, admissionCode(cfg, req))
		if code != "" {
			return
		}
		if a.status != http.StatusCreated {
			t.Fatalf("status %d for a new key, want 201", a.status)
		}
		var task dockettype.Task
		if err := json.Unmarshal(a.body, &task); err != nil {
			t.Fatal(err)
		}
		checkAdmitted(t, cfg, &task, req)
		if tp := traceparentRE.FindStringSubmatch(a.header.Get("traceparent")); task.TraceID != tp[1] {
			t.Errorf("trace_id %q, response traceparent %q", task.TraceID, tp[0])
		}
		if loc := a.header.Get("Location"); loc != "/v1/tasks/"+task.ID {
			t.Errorf("Location %q", loc)
		}
	})
}

// admissionCode is the queue's documented answer to a decoded request:
// its bounds on pool, timeout, priority and attempts first, then whether
// the workflow is registered; "" when the task is admitted.
func admissionCode(cfg queue.Config, req *queue.SubmitRequest) dockettype.Code {
	switch {
	case req.Pool != "" && !req.Pool.Valid(),
		req.TimeoutMS > cfg.MaxTimeout.Milliseconds(),
		req.Priority < queue.MinPriority || req.Priority > queue.MaxPriority,
		req.MaxAttempts < 0 || req.MaxAttempts > cfg.MaxAttemptsLimit:
		return dockettype.CodeInvalidRequest
	case !demoWorkflows[req.Workflow]:
		return dockettype.CodeUnknownWorkflow
	}
	return ""
}

var demoWorkflows = map[string]bool{"demo.echo": true, "demo.sleep": true, "demo.fail": true}

// checkAdmitted checks an admitted task against its request: the stack's
// tenant and principal whatever the body said, the request's fields or
// the defaults.
func checkAdmitted(t *testing.T, cfg queue.Config, task *dockettype.Task, req *queue.SubmitRequest) {
	t.Helper()
	pool, attempts := req.Pool, req.MaxAttempts
	if pool == "" {
		pool = dockettype.PoolOnline
	}
	if attempts == 0 {
		attempts = cfg.DefaultMaxAttempts
	}
	if task.Tenant != httpapitest.Tenant || task.Author != httpapitest.Principal || task.Workflow != req.Workflow ||
		task.Pool != pool || task.Priority != req.Priority || task.MaxAttempts != attempts ||
		task.State != dockettype.StateQueued || task.Attempt != 0 || task.Result != nil && !bytes.Equal(task.Result, []byte("null")) {
		t.Fatalf("admitted %+v for %+v", task, req)
	}
	timeout := cfg.DefaultTimeout
	if req.TimeoutMS > 0 {
		timeout = time.Duration(req.TimeoutMS) * time.Millisecond
	}
	if d := task.DeadlineAt.Sub(task.CreatedAt) - timeout; d < -time.Minute || d > time.Minute {
		t.Fatalf("deadline %s for a task created %s with a timeout of %s", task.DeadlineAt, task.CreatedAt, timeout)
	}
}
