package httpapi_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/httpapi"
	"github.com/docket-dev/docket/internal/httpapi/httpapitest"
	"github.com/docket-dev/docket/internal/logtest"
	"github.com/docket-dev/docket/internal/queue"
)

// The fuzz targets drive the handler in-process: each iteration calls
// ServeHTTP with an httptest.ResponseRecorder. Any bytes can be sent that
// way (a real client refuses some), and an iteration costs no connection.
// One server serves every iteration of a target; each iteration checks the
// lines logged since the previous one.

// fuzzServer is a handler and its checked log.
type fuzzServer struct {
	handler http.Handler
	logs    *logtest.Buffer
	logAt   int // bytes of logs already checked
	n       int // iterations so far, for unique idempotency keys
}

// fuzzQueue keeps every task queued, with no capacity bound: a fuzz run
// admits many tasks and no worker changes what the oracles expect.
//
// Its store calls may take a minute, not the default 10 s: a batch of
// MaxBatchItems took longer than 10 s once under -race beside another test
// run and was answered 503 store_unavailable, which is the documented
// answer to a slow store, not what these tests are about.
var fuzzQueue = queue.Config{
	Online: queue.PoolConfig{Workers: -1, Capacity: -1}, Offline: queue.PoolConfig{Workers: -1, Capacity: -1},
	QueryTimeout: time.Minute,
}

// newStackServer starts a real stack (SQLite, queue, keys) for f.
func newStackServer(f *testing.F, opts httpapitest.Options) (*fuzzServer, *httpapitest.Stack) {
	f.Helper()
	s := httpapitest.New(f, opts)
	return &fuzzServer{handler: s.Server.Config.Handler, logs: s.Logs}, s
}

// newFakeServer serves exec for f, with fakeAuth's keys.
func newFakeServer(f *testing.F, exec httpapi.Executor) *fuzzServer {
	f.Helper()
	logger, logs := logtest.New(f)
	return &fuzzServer{handler: httpapi.New(exec, fakeAuth{}, httpapi.Options{Logger: logger}), logs: logs}
}

// next numbers the iterations.
func (s *fuzzServer) next() int {
	s.n++
	return s.n
}

// newRequest builds a request for path with the raw query and body as
// given, byte for byte.
func newRequest(t *testing.T, method, path, rawQuery string, body []byte) *http.Request {
	t.Helper()
	r := httptest.NewRequestWithContext(t.Context(), method, "/", bytes.NewReader(body))
	if body == nil {
		r = httptest.NewRequestWithContext(t.Context(), method, "/", nil)
	}
	r.URL.Path, r.URL.RawQuery = path, rawQuery
	r.RequestURI = r.URL.RequestURI()
	return r
}

// answer is an in-process response.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// serve runs r through the handler and checks the lines it logged.
func (s *fuzzServer) serve(t *testing.T, r *http.Request) answer {
	t.Helper()
	rec := httptest.NewRecorder()
	s.handler.ServeHTTP(rec, r)
	s.checkLogs(t)
	return answer{status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
}

// checkLogs fails t for each line logged since the last check that leaks
// a canary or SQL text (logtest.Check).
func (s *fuzzServer) checkLogs(t *testing.T) {
	t.Helper()
	var lines string
	lines, s.logAt = s.logs.Since(s.logAt)
	logtest.Check(t, lines)
}

var traceparentRE = regexp.MustCompile(`^00-([0-9a-f]{32})-([0-9a-f]{16})-01$`)

// checkAnswer asserts what holds for every answer, whatever was asked:
// never 5xx; a traceparent header of the W3C format; an error answer is
// the JSON envelope, with a known code that maps to its status, a message
// and the response's trace ID. A 3xx is only the mux's redirect to a
// cleaned path. It returns the error code, "" for other answers.
func checkAnswer(t *testing.T, a answer) dockettype.Code {
	t.Helper()
	if a.status >= 500 {
		t.Fatalf("status %d for a client's request: %s", a.status, a.body)
	}
	tp := traceparentRE.FindStringSubmatch(a.header.Get("traceparent"))
	if tp == nil || tp[1] == "00000000000000000000000000000000" || tp[2] == "0000000000000000" {
		t.Fatalf("response traceparent %q", a.header.Get("traceparent"))
	}
	switch {
	case a.status >= 300 && a.status < 400:
		if a.status != http.StatusMovedPermanently && a.status != http.StatusTemporaryRedirect && a.status != http.StatusPermanentRedirect ||
			a.header.Get("Location") == "" {
			t.Fatalf("status %d, Location %q", a.status, a.header.Get("Location"))
		}
		return ""
	case a.status < 400:
		if ct := a.header.Get("Content-Type"); ct != "application/json" {
			t.Fatalf("status %d with Content-Type %q", a.status, ct)
		}
		if !json.Valid(a.body) {
			t.Fatalf("status %d with a body that is not JSON: %q", a.status, a.body)
		}
		return ""
	}
	if ct := a.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("error %d with Content-Type %q: %q", a.status, ct, a.body)
	}
	var env struct {
		Error *errorDetail `json:"error"`
	}
	dec := json.NewDecoder(bytes.NewReader(a.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&env); err != nil || env.Error == nil {
		t.Fatalf("error %d without the error envelope: %q", a.status, a.body)
	}
	e := env.Error
	if !e.Code.Known() {
		t.Fatalf("error %d with unknown code %q", a.status, e.Code)
	}
	if want, ok := httpapi.StatusOf(e.Code); !ok || want != a.status {
		t.Fatalf("code %q answered with status %d", e.Code, a.status)
	}
	if e.Message == "" {
		t.Fatalf("error %q without a message", e.Code)
	}
	if e.TraceID != tp[1] {
		t.Fatalf("error trace_id %q, traceparent trace id %q", e.TraceID, tp[1])
	}
	if a.status == http.StatusUnauthorized && a.header.Get("WWW-Authenticate") != "Bearer" {
		t.Fatalf("401 with WWW-Authenticate %q", a.header.Get("WWW-Authenticate"))
	}
	if a.status == http.StatusTooManyRequests && a.header.Get("Retry-After") == "" {
		t.Fatal("429 without Retry-After")
	}
	return e.Code
}

// errorDetail is the error envelope's content.
type errorDetail struct {
	Code    dockettype.Code `json:"code"`
	Message string          `json:"message"`
	TraceID string          `json:"trace_id"`
}

// wantCode fails t unless the answer's code is want.
func wantCode(t *testing.T, a answer, got, want dockettype.Code) {
	t.Helper()
	if got != want {
		t.Fatalf("status %d code %q, want code %q: %s", a.status, got, want, a.body)
	}
}

// codeOf returns the code of a *dockettype.Error, failing t for any other
// error: every rejection carries a code.
func codeOf(t *testing.T, err error) dockettype.Code {
	t.Helper()
	de, ok := err.(*dockettype.Error)
	if !ok || !de.Code.Known() || de.Message == "" {
		t.Fatalf("rejection without a known code and a message: %#v", err)
	}
	return de.Code
}
