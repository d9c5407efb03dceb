package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/httpapi"
)

// waitCall records what the executor was asked.
type waitCall struct {
	called bool
	id     string
	wait   time.Duration // 0: Get
}

// FuzzWait sends any task ID and query string to GET /v1/tasks/{id}, over
// a fake executor that records the call (the store plays no part in
// parsing). The answer is never 5xx. When the ID is one path segment:
// a malformed query, an unknown or repeated parameter, or a wait that is
// not a Go duration within [0s, MaxWait] is 400 and reaches no executor;
// an ID that cannot exist (empty, over 128 bytes, not visible ASCII) is
// 404; otherwise the executor is asked for exactly that ID and wait (Get
// for none or zero). No log line quotes the ID or the query.
func FuzzWait(f *testing.F) {
	var last waitCall
	answer := func(id string, d time.Duration) (*dockettype.Task, error) {
		last = waitCall{called: true, id: id, wait: d}
		return &dockettype.Task{ID: id, Tenant: "acme", State: dockettype.StateQueued}, nil
	}
	srv := newFakeServer(f, &fakeExecutor{
		get:  func(_ context.Context, id string) (*dockettype.Task, error) { return answer(id, 0) },
		wait: func(_ context.Context, id string, d time.Duration) (*dockettype.Task, error) { return answer(id, d) },
	})
	f.Fuzz(func(t *testing.T, id, rawQuery string) {
		last = waitCall{}
		r := newRequest(t, http.MethodGet, "/v1/tasks/"+id, rawQuery, nil)
		r.URL.RawPath = "/v1/tasks/" + url.PathEscape(id)
		r.Header.Set("Authorization", "Bearer dk_test")
		a := srv.serve(t, r)
		code := checkAnswer(t, a)
		if id == "" || id == "." || id == ".." || strings.Contains(id, "/") || path.Clean(r.URL.Path) != r.URL.Path {
			// Another route, or the mux's redirect to a cleaned path:
			// only the general properties hold.
			return
		}
		wantWait, queryOK := parseWait(rawQuery)
		switch idOK := possibleID(id); {
		case !queryOK && !idOK: // either refusal
			if code != dockettype.CodeInvalidRequest && code != dockettype.CodeNotFound {
				t.Fatalf("status %d code %q for a bad query and ID", a.status, code)
			}
		case !queryOK:
			wantCode(t, a, code, dockettype.CodeInvalidRequest)
		case !idOK:
			wantCode(t, a, code, dockettype.CodeNotFound)
		default:
			wantCode(t, a, code, "")
			var task dockettype.Task
			if err := json.Unmarshal(a.body, &task); err != nil || task.ID != id {
				t.Fatalf("answer %s for id %q", a.body, id)
			}
			if !last.called || last.id != id || last.wait != wantWait {
				t.Fatalf("executor asked %+v, want id %q wait %s", last, id, wantWait)
			}
			return
		}
		if last.called {
			t.Fatalf("a refused request reached the executor: %+v", last)
		}
	})
}

// parseWait is the documented reading of GET /v1/tasks/{id}'s query: at
// most the parameter wait, once, a Go duration within [0s, MaxWait].
func parseWait(rawQuery string) (time.Duration, bool) {
	values, err := url.ParseQuery(rawQuery)
	if err != nil {
		return 0, false
	}
	for name, vs := range values {
		if name != "wait" || len(vs) != 1 {
			return 0, false
		}
	}
	v, ok := values["wait"]
	if !ok {
		return 0, true
	}
	d, err := time.ParseDuration(v[0])
	if err != nil || d < 0 || d > httpapi.MaxWait {
		return 0, false
	}
	return d, true
}

// possibleID reports whether a task with this ID could exist: 1 to 128
// visible ASCII characters.
func possibleID(id string) bool {
	if len(id) < 1 || len(id) > 128 {
		return false
	}
	for _, c := range []byte(id) {
		if c <= ' ' || c > '~' {
			return false
		}
	}
	return true
}
