package client

import (
	"errors"
	"fmt"
	"time"
)

// Error is an answer with an error status.
type Error struct {
	// StatusCode is the HTTP status.
	StatusCode int
	// Code is Docket's stable error code (for example "not_found",
	// "queue_full"), or empty when the answer was not Docket's error
	// envelope (for example a proxy's error page).
	Code string
	// Message is the server's explanation, safe to show.
	Message string
	// TraceID identifies the request in the server's logs.
	TraceID string
	// RetryAfter is the server's Retry-After, set on 429 and some 503
	// answers.
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	code := e.Code
	if code == "" {
		code = "http_error"
	}
	msg := fmt.Sprintf("docket: %s (HTTP %d)", code, e.StatusCode)
	if e.Message != "" {
		msg += ": " + e.Message
	}
	return msg
}

// IsCode reports whether err is (or wraps) an *Error with the given,
// non-empty code.
// code may be a string or a dockettype.Code:
//
//	client.IsCode(err, "not_found")
//	client.IsCode(err, dockettype.CodeNotFound)
func IsCode[C ~string](err error, code C) bool {
	var e *Error
	return code != "" && errors.As(err, &e) && e.Code == string(code)
}
