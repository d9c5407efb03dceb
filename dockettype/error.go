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
//
// Message is a short human reason (`input needs a "text" string`) that the
// task's own tenant reads in the task's error.message. It is never logged,
// and it must not quote the input.
type Failure struct {
	Code      Code
	Message   string
	Retryable bool
}

func (f *Failure) Error() string {
	if f.Retryable {
		return "workflow failure (retryable): " + string(f.Code)
	}
	return "workflow failure: " + string(f.Code)
}

// Errors a workflow's evidence write (workflow.Binding.RecordEvidence) may
// return; test them with errors.Is.
var (
	// ErrLeaseLost: the attempt's lease is no longer current (the task was
	// cancelled, timed out or recovered); nothing was written. The
	// workflow should return: its result will be refused too.
	ErrLeaseLost = errors.New("docket: the attempt's lease is no longer current")
	// ErrEvidenceUnavailable: the store could not be reached; nothing was
	// written. Returning the error retries the attempt.
	ErrEvidenceUnavailable = errors.New("docket: the evidence store is unavailable")
	// ErrNoEvidenceSink: the binding was not created by the server (a
	// zero Binding in a unit test).
	ErrNoEvidenceSink = errors.New("docket: the binding has no evidence sink")
	// ErrNoDependencySource: the binding was not created by the server, so
	// it cannot read the task's dependencies.
	ErrNoDependencySource = errors.New("docket: the binding cannot read dependencies")
	// ErrNotDependency: the task does not depend on the task named.
	ErrNotDependency = errors.New("docket: not a dependency of this task")
)
