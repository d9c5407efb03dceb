package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/docket-dev/docket/dockettype"
)

// MaxServerWait is the longest one long poll may ask the server to hold;
// Wait with a longer duration polls repeatedly.
const MaxServerWait = 60 * time.Second

// maxResponseBytes bounds the answers the client reads.
const maxResponseBytes = 64 << 20

// Client calls one Docket server with one API key. It is safe for
// concurrent use.
type Client struct {
	base string // without a trailing slash
	key  string
	hc   *http.Client
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient makes the Client send its requests with hc.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) {
		if hc != nil {
			c.hc = hc
		}
	}
}

// New returns a Client of the server at baseURL (for example
// "http://127.0.0.1:8080") authenticating with apiKey.
func New(baseURL, apiKey string, opts ...Option) *Client {
	c := &Client{base: strings.TrimRight(baseURL, "/"), key: apiKey, hc: &http.Client{}}
	for _, o := range opts {
		o(c)
	}
	return c
}

// SubmitParams is one submission.
type SubmitParams struct {
	// IdempotencyKey (required, 1–255 visible ASCII characters) makes the
	// submission safe to retry: the same key with the same parameters
	// returns the same task; with different parameters it is a 409
	// idempotency_conflict.
	IdempotencyKey string
	// Workflow is a registered workflow name, e.g. "demo.echo".
	Workflow string
	// Input is the task's input as JSON (build it with json.Marshal); nil
	// sends JSON null. It must be valid JSON.
	Input json.RawMessage
	// Pool overrides the workflow's default pool ("online" or "offline").
	Pool dockettype.Pool
	// TimeoutMS is the task's deadline from admission (from RunAt when
	// set); 0 takes the server's default.
	TimeoutMS int64
	// RunAt, when set, is the earliest time the task starts.
	RunAt time.Time
	// ConcurrencyKey, when set (1–255 visible ASCII), bounds how many of
	// the tenant's tasks of the workflow with this key run at once.
	ConcurrencyKey string
	// Priority orders the tenant's tasks (higher first); -1000..1000.
	Priority int
	// MaxAttempts bounds retries; 0 takes the server's default.
	MaxAttempts int
	// TraceParent, when set, is sent as the W3C traceparent header; the
	// task records its trace ID.
	TraceParent string
	// DependsOn are the tasks this one waits for: IDs of the tenant's
	// tasks or, in a batch, idempotency keys of earlier tasks of the batch.
	// It stays queued (WaitingOn "dependencies") until all have succeeded.
	DependsOn []string
	// OnDependencyFailure is "fail" (default: end failed with
	// dependency_failed) or "run" (run anyway) when a dependency fails,
	// times out or is cancelled.
	OnDependencyFailure string
}

// SubmitResult is an admitted task.
type SubmitResult struct {
	Task *dockettype.Task
	// Replayed is true when an earlier submission with the same key and
	// parameters made the task (HTTP 200 rather than 201).
	Replayed bool
}

// ListParams filters and pages a list. The zero value lists the newest 50
// tasks.
type ListParams struct {
	State    dockettype.State // optional
	Pool     dockettype.Pool  // optional
	Workflow string           // optional: one workflow's tasks, by its exact name
	Limit    int              // 1..500; 0 takes the server's default (50)
	After    string           // the Next of the previous page
}

// ListResult is one page of tasks, newest first.
type ListResult struct {
	Tasks []*dockettype.Task
	// Next is the After of the next page; empty on the last page.
	Next string
}

// submitBody is the JSON body of POST /v1/tasks.
type submitBody struct {
	Workflow    string          `json:"workflow"`
	Input       json.RawMessage `json:"input,omitempty"`
	Pool        dockettype.Pool `json:"pool,omitempty"`
	TimeoutMS   int64           `json:"timeout_ms,omitempty"`
	Priority    int             `json:"priority,omitempty"`
	MaxAttempts int             `json:"max_attempts,omitempty"`
	RunAt       *time.Time      `json:"run_at,omitempty"`
	DependsOn   []string        `json:"depends_on,omitempty"`
	OnDepFail   string          `json:"on_dependency_failure,omitempty"`
	// ConcurrencyKey: see SubmitParams.
	ConcurrencyKey string `json:"concurrency_key,omitempty"`
}

// runAt is the body's run_at: absent when zero.
func runAt(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// Submit submits a task.
func (c *Client) Submit(ctx context.Context, p *SubmitParams) (*SubmitResult, error) {
	if p == nil {
		return nil, fmt.Errorf("docket: submit: params are required")
	}
	body, err := json.Marshal(submitBody{
		Workflow: p.Workflow, Input: p.Input, Pool: p.Pool,
		TimeoutMS: p.TimeoutMS, Priority: p.Priority, MaxAttempts: p.MaxAttempts, RunAt: runAt(p.RunAt),
		DependsOn: p.DependsOn, OnDepFail: p.OnDependencyFailure,
		ConcurrencyKey: p.ConcurrencyKey,
	})
	if err != nil {
		return nil, fmt.Errorf("docket: submit: encode input: %w", err)
	}
	h := http.Header{}
	h.Set("Idempotency-Key", p.IdempotencyKey)
	if p.TraceParent != "" {
		h.Set("traceparent", p.TraceParent)
	}
	var t dockettype.Task
	status, err := c.do(ctx, http.MethodPost, "/v1/tasks", nil, h, body, &t)
	if err != nil {
		return nil, err
	}
	return &SubmitResult{Task: &t, Replayed: status == http.StatusOK}, nil
}

// Get returns a task.
func (c *Client) Get(ctx context.Context, id string) (*dockettype.Task, error) {
	var t dockettype.Task
	if _, err := c.do(ctx, http.MethodGet, taskPath(id), nil, nil, nil, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// Wait returns the task once it is terminal, or as it is when d has passed.
// The server holds each request for at most MaxServerWait; a longer d polls
// again until the task is terminal, d has passed or ctx is done. When the
// server holds too many long polls (429 too_many_requests), Wait pauses for
// its Retry-After and asks again, within d.
func (c *Client) Wait(ctx context.Context, id string, d time.Duration) (*dockettype.Task, error) {
	if d <= 0 {
		return c.Get(ctx, id)
	}
	// The wait's own deadline, separate from ctx's, which also bounds the
	// final read.
	waitCtx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for {
		deadline, _ := waitCtx.Deadline()
		remaining := time.Until(deadline)
		if remaining <= 0 {
			return c.Get(ctx, id)
		}
		// Whole milliseconds, at least one: the server parses the value
		// with time.ParseDuration.
		wait := max(min(remaining, MaxServerWait).Truncate(time.Millisecond), time.Millisecond)
		var t dockettype.Task
		q := url.Values{"wait": {wait.String()}}
		if _, err := c.do(ctx, http.MethodGet, taskPath(id), q, nil, nil, &t); err != nil {
			if !IsCode(err, dockettype.CodeTooManyRequests) {
				return nil, err
			}
			// The server holds too many long polls: wait as it asks (within
			// d), then ask again.
			if err := pause(ctx, min(max(retryAfterOf(err), minRetryDelay), remaining)); err != nil {
				return nil, err
			}
			continue
		}
		// Poll again only when this request could not cover the rest of d.
		if t.State.Terminal() || wait < MaxServerWait || waitCtx.Err() != nil {
			return &t, nil
		}
	}
}

// minRetryDelay is the shortest pause before a refused long poll is tried
// again, whatever Retry-After says.
const minRetryDelay = 100 * time.Millisecond

func retryAfterOf(err error) time.Duration {
	var e *Error
	if errors.As(err, &e) {
		return e.RetryAfter
	}
	return 0
}

// pause waits d, or until ctx is done.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// List returns one page of the tenant's tasks, newest first. p may be nil.
func (c *Client) List(ctx context.Context, p *ListParams) (*ListResult, error) {
	q := url.Values{}
	if p != nil {
		if p.State != "" {
			q.Set("state", string(p.State))
		}
		if p.Pool != "" {
			q.Set("pool", string(p.Pool))
		}
		if p.Workflow != "" {
			q.Set("workflow", p.Workflow)
		}
		if p.Limit != 0 {
			q.Set("limit", strconv.Itoa(p.Limit))
		}
		if p.After != "" {
			q.Set("after", p.After)
		}
	}
	var out struct {
		Tasks []*dockettype.Task `json:"tasks"`
		Next  string             `json:"next"`
	}
	if _, err := c.do(ctx, http.MethodGet, "/v1/tasks", q, nil, nil, &out); err != nil {
		return nil, err
	}
	return &ListResult{Tasks: out.Tasks, Next: out.Next}, nil
}

// Cancel cancels a queued or running task and returns it: cancelled, or in
// the terminal state it had already reached.
func (c *Client) Cancel(ctx context.Context, id string) (*dockettype.Task, error) {
	var t dockettype.Task
	if _, err := c.do(ctx, http.MethodPost, taskPath(id)+"/cancel", nil, nil, nil, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// Retry queues a failed, timed_out or cancelled task again and returns it:
// same ID, input and idempotency key, its attempt budget renewed. A task
// that succeeded or is not terminal is an *Error with code not_retryable;
// a full pool or tenant is queue_full or tenant_quota_exceeded (429, with
// Retry-After), as for a submission.
func (c *Client) Retry(ctx context.Context, id string) (*dockettype.Task, error) {
	var t dockettype.Task
	if _, err := c.do(ctx, http.MethodPost, taskPath(id)+"/retry", nil, nil, nil, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// Events returns the task's state transitions, oldest first.
func (c *Client) Events(ctx context.Context, id string) ([]dockettype.Event, error) {
	var out struct {
		Events []dockettype.Event `json:"events"`
	}
	if _, err := c.do(ctx, http.MethodGet, taskPath(id)+"/events", nil, nil, nil, &out); err != nil {
		return nil, err
	}
	return out.Events, nil
}

// Evidence returns the evidence the task's workflow recorded.
func (c *Client) Evidence(ctx context.Context, id string) ([]dockettype.Evidence, error) {
	var out struct {
		Evidence []dockettype.Evidence `json:"evidence"`
	}
	if _, err := c.do(ctx, http.MethodGet, taskPath(id)+"/evidence", nil, nil, nil, &out); err != nil {
		return nil, err
	}
	return out.Evidence, nil
}

func taskPath(id string) string { return "/v1/tasks/" + url.PathEscape(id) }

// do sends one request and decodes a 2xx answer into out. Any other status
// is an *Error.
func (c *Client) do(ctx context.Context, method, path string, q url.Values, h http.Header, body []byte, out any) (int, error) {
	resp, err := c.doResponse(ctx, method, path, q, h, body, out)
	if resp == nil {
		return 0, err
	}
	return resp.StatusCode, err
}

// doResponse is do, returning the answer (its body read and closed) for
// its status and headers; nil when no answer came.
func (c *Client) doResponse(ctx context.Context, method, path string, q url.Values, h http.Header, body []byte, out any) (*http.Response, error) {
	u := c.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, fmt.Errorf("docket: %s %s: %w", method, path, err)
	}
	for k, vs := range h {
		req.Header[k] = vs
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "docket-go-client")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		// The URL may hold the caller's query; the error text is the
		// transport's. The key is never in either.
		return nil, fmt.Errorf("docket: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return resp, fmt.Errorf("docket: %s %s: read answer: %w", method, path, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp, errorFrom(resp, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return resp, fmt.Errorf("docket: %s %s: decode answer: %w", method, path, err)
		}
	}
	return resp, nil
}

// errorFrom builds the *Error of an error answer.
func errorFrom(resp *http.Response, data []byte) *Error {
	e := &Error{StatusCode: resp.StatusCode, RetryAfter: retryAfter(resp.Header.Get("Retry-After"))}
	var env struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
			TraceID string `json:"trace_id"`
		} `json:"error"`
	}
	if json.Unmarshal(data, &env) == nil && env.Error.Code != "" {
		e.Code, e.Message, e.TraceID = env.Error.Code, env.Error.Message, env.Error.TraceID
	} else {
		e.Message = http.StatusText(resp.StatusCode)
	}
	if e.TraceID == "" {
		e.TraceID = traceIDOf(resp.Header.Get("traceparent"))
	}
	return e
}

// retryAfter parses a Retry-After value: delay seconds or an HTTP date.
func retryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return 0
		}
		return time.Duration(secs) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

// traceIDOf returns the trace ID of a traceparent value.
func traceIDOf(tp string) string {
	parts := strings.Split(tp, "-")
	if len(parts) != 4 || len(parts[1]) != 32 {
		return ""
	}
	return parts[1]
}

// Call sends one JSON request to path (for example "/v1/worker/claim") and
// decodes a 2xx answer into out (nil: discard it). It is the call behind
// the typed methods, for calls the Client has no method of its own for,
// such as the worker API that package worker speaks. in is marshaled to
// JSON (nil: no body). Any other status is an *Error.
func (c *Client) Call(ctx context.Context, method, path string, in, out any) error {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return fmt.Errorf("docket: %s %s: encode request: %w", method, path, err)
		}
	}
	_, err := c.do(ctx, method, path, nil, nil, body, out)
	return err
}
