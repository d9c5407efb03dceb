package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/queue"
)

// submitFields are the only members a submission body may have, spelled
// exactly so (encoding/json alone would also accept "Workflow").
var submitFields = map[string]bool{
	"workflow": true, "input": true, "pool": true,
	"timeout_ms": true, "priority": true, "max_attempts": true, "run_at": true,
	"depends_on": true, "on_dependency_failure": true,
	"concurrency_key": true,
}

// objectBody reads a JSON request that takes no query parameters: a JSON
// (or missing) Content-Type, a body of at most limit bytes, one object with
// only the given members, each once (decodeObject).
func (s *server) objectBody(w http.ResponseWriter, r *http.Request, fields map[string]bool, limit int64) (map[string]json.RawMessage, []byte, error) {
	if _, err := queryParams(r); err != nil {
		return nil, nil, err
	}
	if err := checkJSONContentType(r); err != nil {
		return nil, nil, err
	}
	body, err := s.readBodyUpTo(w, r, limit)
	if err != nil {
		return nil, nil, err
	}
	raw, err := decodeObject(body, fields, "the request body")
	return raw, body, err
}

// readBody reads the whole request body, bounded by the server's limit.
func (s *server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	return s.readBodyUpTo(w, r, s.maxBody)
}

// readBodyUpTo reads the whole request body, bounded by limit and by the
// body deadline, once its memory is reserved in the server's body budget.
func (s *server) readBodyUpTo(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if err := s.reserveBody(r, limit); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if r.ContentLength > 0 {
		buf.Grow(int(r.ContentLength) + bytes.MinRead) // one allocation, not a doubling series
	}
	if _, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, limit)); err != nil {
		return nil, s.bodyReadError(err, limit)
	}
	return buf.Bytes(), nil
}

// bodyReadError is the client's error for a failed read of a body bounded
// by limit.
func (s *server) bodyReadError(err error, limit int64) error {
	if _, tooLarge := errors.AsType[*http.MaxBytesError](err); tooLarge {
		return dockettype.NewError(dockettype.CodePayloadTooLarge, fmt.Sprintf("the request body is over %d bytes", limit))
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return invalidRequest(fmt.Sprintf("the request body did not arrive within %s", s.bodyTimeout))
	}
	// The client stopped sending: nothing to answer but a 400.
	return invalidRequest("could not read the request body")
}

// checkJSONContentType accepts a missing Content-Type or application/json
// (with any parameters, e.g. charset=utf-8).
func checkJSONContentType(r *http.Request) error {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return nil
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		return invalidRequest("Content-Type must be application/json")
	}
	return nil
}

// decodeSubmission decodes a submission body strictly: one JSON object,
// only the documented members, each at most once and of the right type,
// "workflow" a non-empty string, "timeout_ms" within [0, maxTimeout]
// before anything multiplies it, nothing after the object. The input is
// kept as sent; the queue compacts it.
func decodeSubmission(body []byte, maxTimeout time.Duration) (*queue.SubmitRequest, error) {
	raw, err := decodeObject(body, submitFields, "the request body")
	if err != nil {
		return nil, err
	}
	return submissionOf(raw, maxTimeout)
}

// decodeObject decodes one JSON object whose member names are all in
// fields (spelled exactly so), each at most once, with nothing after it.
// what names the object in error messages.
func decodeObject(data []byte, fields map[string]bool, what string) (map[string]json.RawMessage, error) {
	if !utf8.Valid(data) {
		return nil, invalidRequest(what + " must be UTF-8 JSON")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return nil, invalidRequest(what + " must be a JSON object")
	}
	raw := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, invalidRequest(what + " is not valid JSON")
		}
		name, _ := tok.(string)
		if !fields[name] {
			return nil, invalidRequest(unknownFieldMessage(name))
		}
		if _, dup := raw[name]; dup {
			return nil, invalidRequest(fmt.Sprintf("field %q appears more than once", name))
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, invalidRequest(what + " is not valid JSON")
		}
		raw[name] = v
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, invalidRequest(what + " is not valid JSON")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, invalidRequest("unexpected data after the JSON object")
	}
	// The decoder bounds the nesting of each member's value, not of the
	// whole body: a value nested 10,000 deep inside the object passed, yet
	// encoding/json refuses the body (and an answer that embeds the value)
	// as too deep. Accept only what encoding/json accepts.
	if !json.Valid(data) {
		return nil, invalidRequest(what + " is not valid JSON")
	}
	return raw, nil
}

// decodeInt decodes an integer member that fits an int.
func decodeInt(name string, v json.RawMessage) (*int, error) {
	var n int
	if err := json.Unmarshal(v, &n); err != nil {
		return nil, invalidRequest(fmt.Sprintf("%s must be an integer", name))
	}
	return &n, nil
}

// submissionOf types the members of a submission object.
func submissionOf(raw map[string]json.RawMessage, maxTimeout time.Duration) (*queue.SubmitRequest, error) {
	req := &queue.SubmitRequest{Input: raw["input"]}
	var pool, runAt string
	fields := []struct {
		name string
		dst  any
		want string
	}{
		{"workflow", &req.Workflow, "a string"},
		{"pool", &pool, "a string"},
		{"timeout_ms", &req.TimeoutMS, "an integer"},
		{"priority", &req.Priority, "an integer"},
		{"max_attempts", &req.MaxAttempts, "an integer"},
		{"run_at", &runAt, "an RFC 3339 time"},
		{"depends_on", &req.DependsOn, "an array of task IDs (in a batch, also idempotency keys of earlier items)"},
		{"on_dependency_failure", &req.OnDependencyFailure, `"fail" or "run"`},
		{"concurrency_key", &req.ConcurrencyKey, "a string"},
	}
	for _, f := range fields {
		v, ok := raw[f.name]
		if !ok {
			continue
		}
		if err := json.Unmarshal(v, f.dst); err != nil {
			return nil, invalidRequest(fmt.Sprintf("%s must be %s", f.name, f.want))
		}
	}
	if req.Workflow == "" {
		return nil, invalidRequest(`"workflow" is required and must be a non-empty string`)
	}
	// Compare milliseconds with milliseconds: converting timeout_ms to a
	// Duration first overflows for values past 2^63 ns and wraps around.
	if maxMS := maxTimeout.Milliseconds(); req.TimeoutMS < 0 || req.TimeoutMS > maxMS {
		return nil, invalidRequest(fmt.Sprintf("timeout_ms must be between 1 and %d (0 or absent: the default)", maxMS))
	}
	if _, ok := raw["run_at"]; ok {
		t, err := time.Parse(time.RFC3339Nano, runAt)
		if err != nil {
			return nil, invalidRequest(`run_at must be an RFC 3339 time, e.g. "2026-12-01T09:00:00Z"`)
		}
		req.RunAt = t
	}
	if _, ok := raw["concurrency_key"]; ok && !dockettype.ValidConcurrencyKey(req.ConcurrencyKey) {
		return nil, invalidRequest("concurrency_key must be 1 to 255 visible ASCII characters")
	}
	req.Pool = dockettype.Pool(pool)
	return req, nil
}

// unknownFieldMessage names an unknown member when it can be quoted; the
// answer goes to the client only, never to the log.
func unknownFieldMessage(name string) string {
	if q, ok := quoteName(name); ok {
		return "unknown field " + q
	}
	return "the request body has an unknown field"
}

// quoteName quotes a client-chosen name for an error message when it is
// short and printable ASCII.
func quoteName(name string) (string, bool) {
	if name == "" || len(name) > 64 {
		return "", false
	}
	for i := 0; i < len(name); i++ {
		if name[i] < 0x20 || name[i] > 0x7e {
			return "", false
		}
	}
	return strconv.Quote(name), true
}

func invalidRequest(msg string) error {
	return dockettype.NewError(dockettype.CodeInvalidRequest, msg)
}
