package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/httpapi/httpapitest"
	"github.com/docket-dev/docket/internal/metrics"
)

// A failed task tells its own tenant why, in error.message; the log says
// only that it failed, with its code (workflow_error for a workflow's own
// code outside the closed set: the tenant may have chosen it).
func TestFailedTaskShowsItsReason(t *testing.T) {
	t.Parallel()
	s := httpapitest.New(t, httpapitest.Options{})
	tests := []struct {
		body    string
		code    dockettype.Code
		message string
	}{
		{`{"workflow":"demo.sleep","input":{"ms":"soon"}}`, dockettype.CodeInvalidInput, `input must be {"ms": N} with N from 0 to 3600000`},
		{`{"workflow":"demo.fail","input":{"code":"card_declined"}}`, "card_declined", "demo.fail failed as its input asked"},
	}
	for i, tc := range tests {
		task := mustSubmit(t, s.URL, s.Key, "k"+string(rune('a'+i)), tc.body)
		r := call(t, s.URL, request{method: http.MethodGet, path: "/v1/tasks/" + task.ID + "?wait=10s", key: s.Key})
		r.wantStatus(t, http.StatusOK)
		got := r.task(t)
		if got.State != dockettype.StateFailed || got.Error == nil || got.Error.Code != tc.code || got.Error.Message != tc.message {
			t.Fatalf("%s: task = %s, want failed with %s: %q", tc.body, r.body, tc.code, tc.message)
		}
		if strings.Contains(s.Logs.String(), tc.message) {
			t.Fatalf("the failure message was logged:\n%s", s.Logs)
		}
		// The long poll can answer from the committed outcome before the
		// completer logs it: wait for the line.
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		logged := s.Logs.Await(ctx, func(logs string) bool {
			for _, line := range logLines(t, logs, "completer") {
				if line["msg"] == "task failed" && line["task_id"] == task.ID && line["code"] == string(metrics.CodeLabel(tc.code)) &&
					line["tenant"] == httpapitest.Tenant && line["trace_id"] == task.TraceID {
					return true
				}
			}
			return false
		})
		cancel()
		if !logged {
			t.Fatalf("no \"task failed\" line with the code and IDs of %s:\n%s", task.ID, s.Logs)
		}
	}
}
