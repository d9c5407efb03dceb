package httpapi

import (
	"bytes"
	"math"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/queue"
)

// Internals that the external tests (package httpapi_test), the fuzz
// targets in particular, compare the handler's answers with.

// DecodeSubmission decodes a POST /v1/tasks body as the handler does.
func DecodeSubmission(body []byte, maxTimeout time.Duration) (*queue.SubmitRequest, error) {
	return decodeSubmission(body, maxTimeout)
}

// DecodeBatch decodes a POST /v1/tasks/batch body as a handler with the
// default options does: an error for the whole body, or one request or
// error per task.
func DecodeBatch(body []byte) ([]*queue.SubmitRequest, []error, error) {
	s := &server{maxBody: DefaultMaxBodyBytes, maxTimeout: time.Duration(math.MaxInt64)}
	return s.decodeBatch(bytes.NewReader(body), DefaultMaxBatchBodyBytes)
}

// StatusOf returns the status the API answers an error code with; false
// for codes it answers as 500 internal.
func StatusOf(c dockettype.Code) (int, bool) {
	status, ok := statusOf[c]
	return status, ok
}
