package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/httpapi/httpapitest"
)

// headerBody is the submission FuzzHeaders sends with each set of headers.
var headerBody = []byte(`{"workflow":"demo.echo","input":{"msg":"` + canary + `"}}`)

// FuzzHeaders sends any Authorization, Idempotency-Key and traceparent
// values, each once or twice (repeat's bits 0, 1, 2), with a valid
// submission to a real stack. KEY in the Authorization value stands for the
// stack's key. The answer is never 5xx and follows the documented rules:
//   - authenticated exactly when there is one Authorization header,
//     "Bearer" in any case, a space and the key, surrounding whitespace
//     ignored; otherwise 401;
//   - then the task is admitted (201, or 200 for a key used before) exactly
//     when there is one Idempotency-Key of 1 to 255 visible ASCII
//     characters; otherwise 400;
//   - the answer's trace ID is the request's when there is one valid
//     version-00 traceparent with non-zero IDs, and a new one otherwise;
//     an admitted task carries it.
//
// No log line quotes a header.
func FuzzHeaders(f *testing.F) {
	srv, stack := newStackServer(f, httpapitest.Options{Queue: fuzzQueue})
	f.Fuzz(func(t *testing.T, authorization, idempotencyKey, traceparent string, repeat uint16) {
		authorization = strings.ReplaceAll(authorization, "KEY", stack.Key)
		r := newRequest(t, http.MethodPost, "/v1/tasks", "", headerBody)
		for i, h := range []struct{ name, value string }{
			{"Authorization", authorization}, {"Idempotency-Key", idempotencyKey}, {"traceparent", traceparent},
		} {
			if h.value == "" {
				continue
			}
			r.Header.Add(h.name, h.value)
			if repeat&(1<<i) != 0 {
				r.Header.Add(h.name, h.value)
			}
		}
		a := srv.serve(t, r)
		code := checkAnswer(t, a)

		gotTrace := traceparentRE.FindStringSubmatch(a.header.Get("traceparent"))[1]
		if sent, ok := requestTraceID(traceparent); ok && repeat&4 == 0 {
			if gotTrace != sent {
				t.Fatalf("trace id %q, want the request's %q", gotTrace, sent)
			}
		} else if traceparent != "" && strings.Contains(traceparent, gotTrace) {
			t.Fatalf("trace id %q taken from an invalid or repeated traceparent %q", gotTrace, traceparent)
		}

		if !authenticates(authorization, stack.Key) || repeat&1 != 0 {
			wantCode(t, a, code, dockettype.CodeUnauthenticated)
			return
		}
		if !validKey(idempotencyKey) || repeat&2 != 0 {
			wantCode(t, a, code, dockettype.CodeInvalidRequest)
			return
		}
		wantCode(t, a, code, "")
		var task dockettype.Task
		if err := json.Unmarshal(a.body, &task); err != nil {
			t.Fatal(err)
		}
		if task.Tenant != httpapitest.Tenant || task.Author != httpapitest.Principal || task.Workflow != "demo.echo" {
			t.Fatalf("task %+v", task)
		}
		switch a.status {
		case http.StatusCreated:
			if task.TraceID != gotTrace {
				t.Fatalf("new task with trace id %q, answer's %q", task.TraceID, gotTrace)
			}
		case http.StatusOK: // a key used before: the earlier task
		default:
			t.Fatalf("status %d", a.status)
		}
	})
}

// authenticates reports whether an Authorization value carries key as
// documented: "Bearer" in any case, one space, the key; whitespace around
// the value and the key does not count.
func authenticates(value, key string) bool {
	v := strings.TrimSpace(value)
	if len(v) < len("Bearer ") || !strings.EqualFold(v[:6], "Bearer") || v[6] != ' ' {
		return false
	}
	return strings.TrimSpace(v[7:]) == key
}

// requestTraceID returns the trace ID of a valid W3C version-00
// traceparent: "00-" 32 lowercase hex "-" 16 lowercase hex "-" 2 lowercase
// hex, neither ID all zeros.
func requestTraceID(v string) (string, bool) {
	parts := strings.Split(v, "-")
	if len(parts) != 4 || parts[0] != "00" || !lowerHex(parts[1], 32) || !lowerHex(parts[2], 16) || !lowerHex(parts[3], 2) {
		return "", false
	}
	if strings.Trim(parts[1], "0") == "" || strings.Trim(parts[2], "0") == "" {
		return "", false
	}
	return parts[1], true
}

func lowerHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for _, c := range []byte(s) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
