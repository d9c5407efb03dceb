package httpapi

import (
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strconv"

	"github.com/docket-dev/docket/dockettype"
)

// statusClientClosedRequest is recorded (nginx's convention) when the
// client went away before the answer; nothing reaches it anyway.
const statusClientClosedRequest = 499

// internalMessage is the only message a 500 answer carries.
const internalMessage = "internal server error"

// statusOf maps the API's error codes to HTTP statuses. Codes not listed
// (task-only codes, internal) are answered as 500 internal.
var statusOf = map[dockettype.Code]int{
	dockettype.CodeInvalidRequest:       http.StatusBadRequest,
	dockettype.CodeUnknownWorkflow:      http.StatusBadRequest,
	dockettype.CodeUnauthenticated:      http.StatusUnauthorized,
	dockettype.CodeForbidden:            http.StatusForbidden,
	dockettype.CodeNotFound:             http.StatusNotFound,
	dockettype.CodeMethodNotAllowed:     http.StatusMethodNotAllowed,
	dockettype.CodeIdempotencyConflict:  http.StatusConflict,
	dockettype.CodeBuiltinWorkflow:      http.StatusConflict,
	dockettype.CodePayloadTooLarge:      http.StatusRequestEntityTooLarge,
	dockettype.CodeQueueFull:            http.StatusTooManyRequests,
	dockettype.CodeTenantQuotaExceeded:  http.StatusTooManyRequests,
	dockettype.CodeStorageQuotaExceeded: http.StatusTooManyRequests,
	dockettype.CodeTooManyRequests:      http.StatusTooManyRequests,
	dockettype.CodeStoreUnavailable:     http.StatusServiceUnavailable,
	dockettype.CodeStoreCorrupt:         http.StatusServiceUnavailable,
	dockettype.CodeWritesFailing:        http.StatusServiceUnavailable,
	dockettype.CodeInvalidDependency:    http.StatusBadRequest,
	dockettype.CodeNotRetryable:         http.StatusConflict,
	dockettype.CodeSubmissionsPaused:    http.StatusConflict,
}

type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    dockettype.Code `json:"code"`
	Message string          `json:"message"`
	TraceID string          `json:"trace_id"`
}

// writeError answers with err. Only a *dockettype.Error's code and message
// reach the client; any other error becomes 500 internal with a generic
// message, and its text is neither sent nor logged.
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	if clientGone(r) {
		writeClientGone(w, r)
		return
	}
	var de *dockettype.Error
	if !errors.As(err, &de) {
		writeErrorStatus(w, r, http.StatusInternalServerError, dockettype.CodeInternal, internalMessage)
		return
	}
	status, ok := statusOf[de.Code]
	if !ok {
		writeErrorStatus(w, r, http.StatusInternalServerError, dockettype.CodeInternal, internalMessage)
		return
	}
	if status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", strconv.FormatInt(retryAfterSeconds(de), 10))
	}
	writeErrorStatus(w, r, status, de.Code, de.Message)
}

// retryAfterSeconds is Error.RetryAfter in whole seconds, rounded up, at
// least 1.
func retryAfterSeconds(e *dockettype.Error) int64 {
	secs := int64(math.Ceil(e.RetryAfter.Seconds()))
	return max(secs, 1)
}

// writeErrorStatus writes the error envelope and records the code for the
// access log.
func writeErrorStatus(w http.ResponseWriter, r *http.Request, status int, code dockettype.Code, msg string) {
	body := errorBody{Error: errorDetail{Code: code, Message: msg}}
	if info := infoFrom(r.Context()); info != nil {
		info.code = code
		body.Error.TraceID = info.traceID
	}
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", "Bearer")
	}
	writeJSON(w, r, status, body)
}

// writeJSON marshals v and writes it with status.
func writeJSON(w http.ResponseWriter, r *http.Request, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		if _, isErr := v.(errorBody); isErr {
			status, b = http.StatusInternalServerError, []byte(`{"error":{"code":"internal","message":"internal server error"}}`)
		} else {
			writeErrorStatus(w, r, http.StatusInternalServerError, dockettype.CodeInternal, internalMessage)
			return
		}
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// clientGone reports whether the client closed the request. A request
// whose body the server cut off has a cancelled context too, but its client
// is there to read the answer.
func clientGone(r *http.Request) bool {
	if r.Context().Err() == nil {
		return false
	}
	info := infoFrom(r.Context())
	return info == nil || info.body == nil || !info.body.wasCut()
}

// writeClientGone records that the client went away; it writes no body.
func writeClientGone(w http.ResponseWriter, _ *http.Request) {
	w.WriteHeader(statusClientClosedRequest)
}
