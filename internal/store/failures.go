package store

import (
	"context"
	"time"

	"github.com/docket-dev/docket/dockettype"
)

// Failures is what an operator does with tasks that did not succeed: run
// them again, act on many at once by filter, see them grouped.
type Failures interface {
	// Retry queues each item's task again when it is failed, timed_out or
	// cancelled, in one transaction, and returns one result per item. A
	// retried task keeps its ID, input and idempotency binding; its result
	// row goes, it is live again (queued, ready now, attempt 0 so its
	// attempt budget is whole again, epoch+1 so that a lease of its past
	// attempts stays fenced out, a deadline of its original timeout counted
	// from Now), with a retried event (code retried, By). Each retry takes a
	// unit of its pool's capacity and of its tenant's limit, checked like an
	// admission.
	Retry(ctx context.Context, params *RetryParams) ([]RetryResult, error)
	// MatchTasks returns up to Limit tasks matching Filter whose ID is
	// above After, by ID (oldest first): a cursor for bounded batches.
	MatchTasks(ctx context.Context, params *MatchTasksParams) ([]MatchedTask, error)
	// DeleteTasks deletes the terminal tasks among TaskIDs of Tenant (any
	// tenant when empty) now, ahead of retention, with their input,
	// events, evidence and idempotency binding, and returns the IDs it
	// deleted. Live tasks and unknown IDs are left alone.
	DeleteTasks(ctx context.Context, params *DeleteTasksParams) ([]string, error)
	// DeadLetters groups the failed tasks of Tenant (every tenant when
	// empty) by tenant, workflow and error code, largest groups first (at
	// most Limit).
	DeadLetters(ctx context.Context, params *DeadLettersParams) ([]DeadLetterGroup, error)

	BulkJobs
}

// BulkJobs stores bulk actions as jobs that any node advances in bounded
// batches. Every write is a compare-and-set on the job's version, and a
// node works on a job only under a lease, so that several nodes never run
// one batch twice at once, and a job whose node died is taken over when
// its lease expires.
type BulkJobs interface {
	// CreateBulkJob stores a new running job (Version 1, no lease).
	CreateBulkJob(ctx context.Context, job *BulkJob) error
	// GetBulkJob returns one job, or ErrNotFound.
	GetBulkJob(ctx context.Context, id string) (*BulkJob, error)
	// LeaseBulkJob leases the oldest running job whose lease is free,
	// expired at Now, or already Owner's, to Owner until Now+TTL
	// (version+1) and returns it; ErrNotFound when there is none.
	LeaseBulkJob(ctx context.Context, params *LeaseBulkJobParams) (*BulkJob, error)
	// AdvanceBulkJob records a batch of a running job leased at Version:
	// the cursor, the counts added, the state (running, or done for the
	// last batch), and renews the lease; the version goes one up. ok is
	// false (nothing written) when the job changed meanwhile (cancelled,
	// taken over).
	AdvanceBulkJob(ctx context.Context, params *AdvanceBulkJobParams) (ok bool, err error)
	// CancelBulkJob makes a running job cancelled (version+1) and returns
	// it; a finished job is returned unchanged; ErrNotFound when there is
	// none.
	CancelBulkJob(ctx context.Context, id string, now time.Time) (*BulkJob, error)
}

// RetryParams is one retry transaction.
type RetryParams struct {
	Now   time.Time
	By    dockettype.Actor
	Items []*RetryItem
	// Quiet answers outcomes only (RetryResult.Task nil), for a bulk retry
	// that counts them: the transaction reads no task back.
	Quiet bool
}

// RetryItem is one task to queue again.
type RetryItem struct {
	TaskID string
	Tenant string // the task's tenant: another tenant's task is RetryNotFound
	// Queue is where the task waits again (its workflow resolved now, as an
	// admission would); its pool must be the task's (MatchedTask.Pool):
	// the store does not check it.
	Queue        Queue
	PoolCapacity int // most non-terminal tasks in the pool; <= 0 means unlimited
}

// RetryOutcome says what happened to one RetryItem.
type RetryOutcome int

const (
	Retried                  RetryOutcome = iota + 1 // queued again; Task is it
	NotRetryable                                     // succeeded or not terminal; Task is it as it is
	RetryNotFound                                    // no such task of the tenant
	RetryQueueFull                                   // pool capacity reached
	RetryTenantQuotaExceeded                         // tenant in-flight limit reached
)

func (o RetryOutcome) String() string {
	switch o {
	case Retried:
		return "retried"
	case NotRetryable:
		return "not_retryable"
	case RetryNotFound:
		return "not_found"
	case RetryQueueFull:
		return "queue_full"
	case RetryTenantQuotaExceeded:
		return "tenant_quota_exceeded"
	}
	return "unknown"
}

// RetryResult is the outcome of one RetryItem.
type RetryResult struct {
	Outcome RetryOutcome
	Task    *dockettype.Task
}

// TaskFilter selects tasks for a bulk action. Zero fields match all.
type TaskFilter struct {
	Tenant        string           `json:"tenant,omitempty"`
	State         dockettype.State `json:"state,omitempty"`
	Workflow      string           `json:"workflow,omitempty"`
	Pool          dockettype.Pool  `json:"pool,omitempty"`
	ErrorCode     dockettype.Code  `json:"error_code,omitempty"`
	CreatedBefore *time.Time       `json:"created_before,omitempty"`
	CreatedAfter  *time.Time       `json:"created_after,omitempty"`
}

// MatchTasksParams pages the tasks matching a filter, by ID.
type MatchTasksParams struct {
	Filter TaskFilter
	TaskID string // when set, only this task
	After  string // the last ID of the previous batch
	Limit  int
}

// MatchedTask is a task a filter matched.
type MatchedTask struct {
	TaskID   string
	Tenant   string
	Workflow string
	Pool     dockettype.Pool
	State    dockettype.State
}

// DeleteTasksParams names terminal tasks to delete now.
type DeleteTasksParams struct {
	Tenant  string // "": any tenant's
	TaskIDs []string
}

// DeadLettersParams bounds a dead-letter view.
type DeadLettersParams struct {
	Tenant string // "": every tenant
	Limit  int
}

// DeadLetterGroup is the failed tasks of one tenant, workflow and error
// code.
type DeadLetterGroup struct {
	Tenant   string          `json:"tenant"`
	Workflow string          `json:"workflow"`
	Code     dockettype.Code `json:"error_code"`
	Count    int             `json:"count"`
	// Oldest and Newest are the earliest and latest finish times.
	Oldest time.Time `json:"oldest_failed_at"`
	Newest time.Time `json:"newest_failed_at"`
}

// Bulk actions.
const (
	BulkCancel = "cancel"
	BulkRetry  = "retry"
	BulkDelete = "delete"
)

// Bulk job states.
const (
	BulkRunning   = "running"
	BulkDone      = "done"
	BulkCancelled = "cancelled"
)

// BulkJob is one bulk action and its progress.
type BulkJob struct {
	ID     string
	Action string
	Filter TaskFilter // Filter.Tenant empty: every tenant (an admin's job)
	By     dockettype.Actor
	State  string

	// Matched counts the tasks the job found so far (final once done);
	// each of them is Done (the action applied), Skipped (it did not
	// apply: a task not in a state the action changes) or Failed (refused:
	// capacity, tenant limit).
	Matched, Done, Skipped, Failed int

	Cursor         string // the last task ID handled
	Version        int64
	LeaseOwner     string
	LeaseExpiresAt *time.Time
	CreatedAt      time.Time
	UpdatedAt      time.Time
	FinishedAt     *time.Time
}

// LeaseBulkJobParams asks for a job to work on.
type LeaseBulkJobParams struct {
	Now   time.Time
	Owner string
	TTL   time.Duration
}

// AdvanceBulkJobParams records one batch of a job.
type AdvanceBulkJobParams struct {
	Now     time.Time
	ID      string
	Version int64 // as leased or last advanced
	Owner   string
	TTL     time.Duration // the lease is renewed to Now+TTL
	Cursor  string
	Last    bool // the batch was the last: the job is done

	Matched, Done, Skipped, Failed int // added
}
