package dockettype

import (
	"errors"
	"time"
)

// Error is an error with a stable code, safe to show to a client: its
// Message never carries payloads or database text.
type Error struct {
	Code       Code
	Message    string
	RetryAfter time.Duration // set for 429 answers
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// NewError returns an *Error with the given code and client-safe message.
func NewError(code Code, msg string) *Error { return &Error{Code: code, Message: msg} }

// CodeOf returns the code of the first *Error in err's chain, or
// CodeInternal when there is none.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

// Failure is the error a workflow returns to end an attempt with a chosen
// code. Retryable failures are re-queued with backoff while attempts remain;
// others fail the task at once.
type Failure struct {
	Code      Code
	Retryable bool
}

func (f *Failure) Error() string {
	if f.Retryable {
		return "workflow failure (retryable): " + string(f.Code)
	}
	return "workflow failure: " + string(f.Code)
}
