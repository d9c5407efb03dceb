package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/docket-dev/docket/dockettype"
)

// Task is one claimed attempt: the binding the server made and the input
// as admitted. The binding's fields come from the server, never from the
// task's submitter.
type Task struct {
	ID            string
	Tenant        string
	Author        string
	Workflow      string
	Pool          dockettype.Pool
	Attempt       int
	MaxAttempts   int
	DeadlineAt    time.Time
	TraceID       string
	ConfigVersion string
	Input         json.RawMessage
	// Traceparent is the W3C traceparent of the task's span in its trace
	// (the attempt's span, made by the worker when tracing, is its child);
	// "" when the server sent none.
	Traceparent string

	w     *Worker
	lease string
}

// LeaseToken is the attempt's lease token as the server issued it: opaque,
// for a tool that needs to tell one attempt's lease from another's (every
// write for the task is fenced by it already).
func (t *Task) LeaseToken() string { return t.lease }

// Evidence appends one evidence item to the task under this attempt's
// lease. Its error wraps ErrLeaseLost once the lease is no longer current
// (the task was cancelled, timed out or recovered).
func (t *Task) Evidence(ctx context.Context, kind string, body any) error {
	raw, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("worker: evidence body: %w", err)
	}
	var ans itemsAnswer
	err = retry(ctx, func() error {
		return t.w.c.Call(ctx, http.MethodPost, "/v1/worker/evidence", evidenceRequest{
			Items: []evidenceItem{{Lease: t.lease, Kind: kind, Body: raw}}, WorkerID: t.w.opts.WorkerID}, &ans)
	})
	if err != nil {
		return fmt.Errorf("worker: evidence: %w", err)
	}
	if len(ans.Items) != 1 || ans.Items[0].Status != "ok" {
		return ErrLeaseLost
	}
	return nil
}

// Failure is a handler's chosen failure (see Fail).
type Failure struct {
	Code      string // lowercase snake case, e.g. "invalid_input"
	Message   string // shown to the task's own tenant; never logged
	Retryable bool
}

func (f *Failure) Error() string { return "worker: task failed: " + f.Code }

// Fail returns the error that fails the attempt with code and message,
// queued again (with backoff) while attempts remain when retryable.
func Fail(code, message string, retryable bool) error {
	return &Failure{Code: code, Message: message, Retryable: retryable}
}

// Wire types of the worker API.
type claimRequest struct {
	Workflows []string        `json:"workflows"`
	Pool      dockettype.Pool `json:"pool,omitempty"`
	Max       int             `json:"max"`
	WaitMS    int64           `json:"wait_ms"`
	WorkerID  string          `json:"worker_id"`
	Slots     int             `json:"slots"`
	SDK       string          `json:"sdk"`
}

type claimAnswer struct {
	Tasks       []claimedTask `json:"tasks"`
	LeaseTTLMS  int64         `json:"lease_ttl_ms"`
	HeartbeatMS int64         `json:"heartbeat_ms"`
}

type claimedTask struct {
	Lease       string           `json:"lease"`
	Task        *dockettype.Task `json:"task"`
	Input       json.RawMessage  `json:"input"`
	Traceparent string           `json:"traceparent"`
}

func (c claimedTask) task(w *Worker) *Task {
	t := c.Task
	return &Task{ID: t.ID, Tenant: t.Tenant, Author: t.Author, Workflow: t.Workflow, Pool: t.Pool, Attempt: t.Attempt,
		MaxAttempts: t.MaxAttempts, DeadlineAt: t.DeadlineAt, TraceID: t.TraceID, ConfigVersion: t.ConfigVersion,
		Input: c.Input, Traceparent: c.Traceparent, w: w, lease: c.Lease}
}

// maxLeasesPerCall is the most leases one heartbeat or release carries.
const maxLeasesPerCall = 10_000

type leasesRequest struct {
	Leases   []string `json:"leases"`
	WorkerID string   `json:"worker_id,omitempty"`
}

type leaseStatus struct {
	Lease  string `json:"lease"`
	Status string `json:"status"`
}

type leasesAnswer struct {
	Leases []leaseStatus `json:"leases"`
}

type itemsAnswer struct {
	Items []leaseStatus `json:"items"`
}

type failureBody struct {
	Code      string `json:"code"`
	Message   string `json:"message"`
	Retryable bool   `json:"retryable"`
}

type finishItem struct {
	Lease   string          `json:"lease"`
	Outcome string          `json:"outcome"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *failureBody    `json:"error,omitempty"`
}

type finishRequest struct {
	Items    []finishItem `json:"items"`
	WorkerID string       `json:"worker_id,omitempty"`
}

type evidenceItem struct {
	Lease string          `json:"lease"`
	Kind  string          `json:"kind"`
	Body  json.RawMessage `json:"body"`
}

type evidenceRequest struct {
	Items    []evidenceItem `json:"items"`
	WorkerID string         `json:"worker_id,omitempty"`
}

// DependencyResults returns the outcome of each task this one depends on
// (depends_on at submission), in the order given: its state and, once
// terminal, its result or error (fan-in). The task runs only once every
// dependency has succeeded, unless it was submitted with
// on_dependency_failure "run". Its error wraps ErrLeaseLost when the server
// refuses the lease.
func (t *Task) DependencyResults(ctx context.Context) ([]dockettype.DependencyResult, error) {
	var ans dependenciesAnswer
	err := retry(ctx, func() error {
		return t.w.c.Call(ctx, http.MethodPost, "/v1/worker/dependencies",
			dependenciesRequest{Lease: t.lease, WorkerID: t.w.opts.WorkerID}, &ans)
	})
	if err != nil {
		return nil, fmt.Errorf("worker: dependencies: %w", err)
	}
	if ans.Status != "ok" {
		return nil, ErrLeaseLost
	}
	return ans.Dependencies, nil
}

// DependencyResult returns the outcome of one of the tasks this one
// depends on, or an error wrapping dockettype.ErrNotDependency.
func (t *Task) DependencyResult(ctx context.Context, taskID string) (dockettype.DependencyResult, error) {
	all, err := t.DependencyResults(ctx)
	if err != nil {
		return dockettype.DependencyResult{}, err
	}
	for _, d := range all {
		if d.ID == taskID {
			return d, nil
		}
	}
	return dockettype.DependencyResult{}, fmt.Errorf("worker: %s: %w", taskID, dockettype.ErrNotDependency)
}

type dependenciesRequest struct {
	Lease    string `json:"lease"`
	WorkerID string `json:"worker_id,omitempty"`
}

type dependenciesAnswer struct {
	Status       string                        `json:"status"`
	Dependencies []dockettype.DependencyResult `json:"dependencies"`
}
