package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/queue"
)

// submitFields are the only members a submission body may have, spelled
// exactly so (encoding/json alone would also accept "Workflow").
var submitFields = map[string]bool{
	"workflow": true, "input": true, "pool": true,
	"timeout_ms": true, "priority": true, "max_attempts": true,
}

// readBody reads the whole request body, bounded by the server's limit.
func (s *server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	return readBodyUpTo(w, r, s.maxBody)
}

// readBodyUpTo reads the whole request body, bounded by limit.
func readBodyUpTo(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		if _, tooLarge := errors.AsType[*http.MaxBytesError](err); tooLarge {
			return nil, dockettype.NewError(dockettype.CodePayloadTooLarge, fmt.Sprintf("the request body is over %d bytes", limit))
		}
		// The client stopped sending: nothing to answer but a 400.
		return nil, invalidRequest("could not read the request body")
	}
	return body, nil
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
// "workflow" a non-empty string, nothing after the object. The input is
// kept as sent; the queue compacts it.
func decodeSubmission(body []byte) (*queue.SubmitRequest, error) {
	if !utf8.Valid(body) {
		return nil, invalidRequest("the request body must be UTF-8 JSON")
	}
	raw, err := decodeObject(body, submitFields, "the request body")
	if err != nil {
		return nil, err
	}
	return submissionOf(raw)
}

// decodeObject decodes one JSON object whose member names are all in
// fields (spelled exactly so), each at most once, with nothing after it.
// what names the object in error messages.
func decodeObject(data []byte, fields map[string]bool, what string) (map[string]json.RawMessage, error) {
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
	return raw, nil
}

// submissionOf types the members of a submission object.
func submissionOf(raw map[string]json.RawMessage) (*queue.SubmitRequest, error) {
	req := &queue.SubmitRequest{Input: raw["input"]}
	var pool string
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
