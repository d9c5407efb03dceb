package queue

import (
	"encoding/json"
	"time"

	"github.com/docket-dev/docket/dockettype"
)

// SubmitRequest is a client's submission. The author and tenant come from
// the authenticated principal, never from here.
type SubmitRequest struct {
	IdempotencyKey string
	Workflow       string
	Input          json.RawMessage // nil means JSON null
	Pool           dockettype.Pool // optional override of the workflow's default pool
	TimeoutMS      int64           // 0: the default timeout
	Priority       int             // higher runs first within a tenant; -1000..1000
	MaxAttempts    int             // 0: the default
	TraceID        string          // 32 lowercase hex digits; empty: the server makes one
	// RunAt, when set, is the earliest time the task starts; its deadline
	// counts from then. Zero (or a time already past): at once.
	RunAt time.Time
	// DependsOn are the tasks this one waits for: IDs of the tenant's
	// tasks, or, in a batch, the idempotency keys of earlier items. The
	// task stays queued (waiting_on "dependencies") until all succeeded.
	DependsOn []string
	// OnDependencyFailure is "fail" (the default: end failed with
	// dependency_failed) or "run" (run anyway) when a dependency fails,
	// times out or is cancelled.
	OnDependencyFailure string
	// ConcurrencyKey, when set (1–255 visible ASCII), bounds how many of
	// the tenant's tasks of the workflow with this key run at once (the
	// workflow's concurrency_per_key, default 1).
	ConcurrencyKey string
}

// SubmitResult is an admitted (or replayed) task.
type SubmitResult struct {
	Task     *dockettype.Task
	Replayed bool // true when an earlier submission with the same key and request made the task
}

// ListRequest filters and pages a tenant's tasks.
type ListRequest struct {
	State    dockettype.State // optional
	Pool     dockettype.Pool  // optional
	Workflow string           // optional: one workflow's tasks (its exact name)
	Limit    int              // 1..500; 0 means 50
	After    string           // the Next cursor of the previous page
}

// ListResult is one page of tasks.
type ListResult struct {
	Tasks []*dockettype.Task
	Next  string // empty on the last page
}
