package store

import (
	"context"
	"time"

	"github.com/docket-dev/docket/dockettype"
)

// Store is everything a backend provides. Consumers should depend on the
// narrow interfaces below, which are split by caller.
type Store interface {
	Admitter
	Claimer
	Finisher
	LeaseKeeper
	Recoverer
	DeadlineEnforcer
	Canceller
	Reader
	Cleaner
	Statter
	Admin
	RuleSets
	Workflows
	Workers
	Schedules
	Failures
	FlowControl

	// Ping reports whether the database is reachable and usable: an error
	// wrapping ErrCorrupt once any call found the database damaged, one
	// wrapping ErrWritesFailing while writes fail (see WriteProber).
	Ping(ctx context.Context) error
	// DatabaseTime returns the database server's clock, so that a node can
	// measure how far its own clock is from the one every node shares.
	DatabaseTime(ctx context.Context) (time.Time, error)
	// Fork returns a Store on the same database with its own connection
	// budget (opts.MaxConns). Schedulers and pools each use a fork so that a
	// stuck query in one cannot take the connection another needs. Closing
	// a fork does not close its parent.
	Fork(name string, opts ForkOptions) (Store, error)
	// Close releases the store's connections.
	Close() error
}

// Admitter admits tasks.
type Admitter interface {
	// Admit runs each item in order inside one transaction and returns one
	// result per item. An item's rejection (conflict, queue full, quota)
	// does not affect the other items and writes nothing for that item.
	// Items are processed in order, so a later item sees an earlier item's
	// idempotency binding.
	Admit(ctx context.Context, params *AdmitParams) ([]AdmitResult, error)
}

// Claimer claims queued tasks.
type Claimer interface {
	// Claim moves up to Limit ready tasks (state queued, run_after <= Now)
	// of Queue (of Tenant alone when it is set) to running, in one transaction, choosing among tenants with
	// ready work fairly (stride scheduling by tenant weight) and, within a
	// tenant, by priority (higher first) then age. Each claimed task gets
	// attempt+1, lease_epoch+1, LeaseOwner, lease_expires_at = Now+LeaseTTL
	// and, on its first claim, started_at = Now. Its cost does not grow with
	// the number of queued tasks.
	Claim(ctx context.Context, params *ClaimParams) ([]*ClaimedTask, error)
}

// Finisher applies the outcome of attempts.
type Finisher interface {
	// Finish applies each item, fenced by its lease, in one transaction, and
	// returns one result per item. A stale item is refused and changes
	// nothing. Terminal outcomes release the task's reservation.
	Finish(ctx context.Context, params *FinishParams) ([]FinishResult, error)
	// AppendEvidence records evidence items under a lease, fenced like a
	// result; a stale lease gets ErrStaleLease and nothing is written.
	AppendEvidence(ctx context.Context, params *AppendEvidenceParams) error
}

// LeaseKeeper renews leases.
type LeaseKeeper interface {
	// Heartbeat extends each lease to Now+LeaseTTL, fenced, and returns the
	// leases it refused (task no longer running under that epoch), each
	// with the task's state as the same transaction read it.
	Heartbeat(ctx context.Context, params *HeartbeatParams) (refused []RefusedLease, err error)
}

// Recoverer returns expired leases to the queue. The work is split in a
// read-only scan and a short fenced write so that, with SQLite, no scan holds
// the write lock while it reads.
type Recoverer interface {
	// FindExpiredLeases returns at most Limit running tasks whose lease
	// expired at or before Now, oldest expiry first, using an index.
	FindExpiredLeases(ctx context.Context, params *FindExpiredLeasesParams) ([]ExpiredLease, error)
	// RecoverLeases moves each still-expired task (same epoch, still
	// running, lease still expired at Now) back to queued with epoch+1, or
	// to failed with code lease_lost when attempt >= max_attempts. Others
	// are skipped.
	RecoverLeases(ctx context.Context, params *RecoverLeasesParams) (RecoverResult, error)
}

// DeadlineEnforcer times out overdue tasks, split like Recoverer.
type DeadlineEnforcer interface {
	// FindOverdue returns at most Limit queued or running tasks whose
	// deadline is at or before Now, earliest first, using an index.
	FindOverdue(ctx context.Context, params *FindOverdueParams) ([]OverdueTask, error)
	// ExpireTasks makes each item still in the same state and epoch
	// timed_out (code deadline_exceeded, epoch+1) and returns the items it
	// changed.
	ExpireTasks(ctx context.Context, params *ExpireTasksParams) ([]OverdueTask, error)
}

// Canceller cancels tasks.
type Canceller interface {
	// Cancel makes a queued or running task of Tenant cancelled (epoch+1)
	// and returns it with Previous set to its state and epoch before the
	// change. A terminal task is returned unchanged with Changed false.
	// Another tenant's task is ErrNotFound.
	Cancel(ctx context.Context, params *CancelParams) (*CancelResult, error)
	// CancelBatch cancels each item's task as Cancel does, all in one
	// transaction (a bulk cancel's batch), and answers each item in
	// order. A task of another tenant than the item's, or none, is
	// NotFound; a terminal one is unchanged.
	CancelBatch(ctx context.Context, params *CancelBatchParams) ([]CancelBatchResult, error)
}

// Reader reads tasks and their history. Every read is scoped to a tenant;
// another tenant's row is ErrNotFound (or absent from a list).
type Reader interface {
	GetTask(ctx context.Context, params *GetTaskParams) (*dockettype.Task, error)
	// ListTasks returns the tenant's tasks newest first, keyset-paginated
	// by ID (After is the last ID of the previous page). Listed tasks carry
	// no result: a page stays small whatever the tasks returned.
	ListTasks(ctx context.Context, params *ListTasksParams) ([]*dockettype.Task, error)
	ListEvents(ctx context.Context, params *GetTaskParams) ([]dockettype.Event, error)
	ListEvidence(ctx context.Context, params *GetTaskParams) ([]dockettype.Evidence, error)
	// GetInput returns the task's input exactly as admitted.
	GetInput(ctx context.Context, params *GetTaskParams) ([]byte, error)
	// DependencyResults returns the outcome of each task the tenant's task
	// depends on, in the order given at submission (none when it has no
	// dependencies; ErrNotFound for another tenant's task).
	DependencyResults(ctx context.Context, params *GetTaskParams) ([]dockettype.DependencyResult, error)
	// TaskStates returns the state of each of the tenant's tasks among
	// IDs; an ID absent from the answer is not a task of the tenant.
	TaskStates(ctx context.Context, params *TaskStatesParams) (map[string]dockettype.State, error)
}

// TaskStatesParams names some of a tenant's tasks.
type TaskStatesParams struct {
	Tenant string
	IDs    []string
}

// Cleaner deletes finished work past its retention.
type Cleaner interface {
	// DeleteFinished deletes up to Limit tasks that became terminal before
	// Before, oldest first, with their input, events, evidence and
	// idempotency binding (the key can then be used again), except a task
	// that a live (queued or running) task depends on: it stays until its
	// dependents have finished. It returns how many tasks it deleted;
	// fewer than Limit means none are left.
	DeleteFinished(ctx context.Context, params *DeleteFinishedParams) (int, error)
}

// Stats reports what an operator sees: per pool and per tenant.
type Statter interface {
	// Stats reads counters and indexed counts; its cost does not grow with
	// the number of finished tasks.
	Stats(ctx context.Context) (*Stats, error)
	// Throughput counts the tasks of every node that became terminal in
	// [Since, Until), per bucket of Bucket from Since and per state, from
	// the task history (the events to a terminal state; a task retried
	// after it failed counts again when it ends again). It returns every
	// bucket in order, empty ones included; the last ends at Until. It
	// reads the window's terminal events alone, through their time index,
	// so its cost grows with the tasks finished in the window, not with
	// the history. A bucket under a millisecond, an empty window or one of
	// more than MaxThroughputBuckets is ErrInvalid.
	Throughput(ctx context.Context, params *ThroughputParams) ([]ThroughputBucket, error)
}

// Admin manages tenants and API keys.
type Admin interface {
	// EnsureTenant creates the tenant when missing and reports whether it
	// did.
	EnsureTenant(ctx context.Context, params *EnsureTenantParams) (created bool, err error)
	// GetTenant returns a tenant with its live in-flight count, or
	// ErrNotFound.
	GetTenant(ctx context.Context, id string) (*Tenant, error)
	// ListTenants returns every tenant, by ID.
	ListTenants(ctx context.Context) ([]*Tenant, error)
	// UpdateTenant changes only the fields given, creating the tenant if
	// needed, and returns it. MaxInFlight 0 means unlimited; Weight >= 1.
	UpdateTenant(ctx context.Context, params *UpdateTenantParams) (*Tenant, error)
	// CreateAPIKey stores a key hash (creating the tenant if needed) and
	// returns the stored key (without its hash).
	CreateAPIKey(ctx context.Context, params *CreateAPIKeyParams) (*APIKey, error)
	// LookupAPIKey returns the non-revoked key with this hash, or
	// ErrNotFound.
	LookupAPIKey(ctx context.Context, hash string) (*APIKey, error)
	// ListAPIKeys returns the keys of Tenant (all when empty), oldest
	// first, never their hashes.
	ListAPIKeys(ctx context.Context, tenant string) ([]*APIKey, error)
	// RevokeAPIKey marks a key revoked (once; revoking again returns it
	// unchanged) and returns it, or ErrNotFound.
	RevokeAPIKey(ctx context.Context, params *RevokeAPIKeyParams) (*APIKey, error)
}

// RuleSets stores published, immutable quality rule set versions.
type RuleSets interface {
	// PublishRuleSet stores a new version numbered one past the newest and
	// returns it. Publishing identical content again still makes a new
	// version.
	PublishRuleSet(ctx context.Context, params *PublishRuleSetParams) (*RuleSet, error)
	// ListRuleSets returns every version, oldest first, without bodies.
	ListRuleSets(ctx context.Context) ([]*RuleSet, error)
	// GetRuleSet returns one version with its body, or ErrNotFound.
	GetRuleSet(ctx context.Context, version string) (*RuleSet, error)
	// LatestRuleSet returns the newest version without its body (Body nil:
	// read it with GetRuleSet), or ErrNotFound when none was published.
	// Admission asks it for every task in pilot mode, so it stays cheap
	// whatever the size of the rule set.
	LatestRuleSet(ctx context.Context) (*RuleSet, error)
}

// ForkOptions sizes a fork.
type ForkOptions struct {
	// MaxConns bounds the fork's connections (at least 1).
	MaxConns int
	// Background marks bulk work (the offline pool). Where a backend
	// serializes writes (SQLite), a background fork's writes let waiting
	// foreground writes go first, with a bound so that they never starve.
	Background bool
}

// Lease names one claim of a task: the fencing token of every worker write.
type Lease struct {
	TaskID string
	Epoch  int64
}

// AdmitParams is one admission transaction.
type AdmitParams struct {
	Now   time.Time
	Items []*AdmitItem
	// NewTenantLimit is the in-flight limit given to a tenant this
	// admission creates (0: unlimited).
	NewTenantLimit int
}

// AdmitItem is one task to admit.
type AdmitItem struct {
	TaskID         string // generated by the caller, used when the item is admitted
	Tenant         string
	Author         string
	IdempotencyKey string
	RequestHash    string // hash of the normalized request, compared on replay
	Workflow       string
	Pool           dockettype.Pool
	Priority       int
	MaxAttempts    int
	DeadlineAt     time.Time
	RunAt          time.Time // not claimed before; zero: at once
	TraceID        string
	// TraceUnsampled: the admitting request's trace is not sampled (its
	// span's W3C sampled flag was off), so the task's later spans are not
	// recorded either, on any node (ClaimedTask.TraceUnsampled).
	TraceUnsampled bool
	ConfigVersion  string
	Input          []byte
	// Queue is where the task waits to be claimed; empty: Pool's own queue
	// (a workflow compiled into the server). Its pool must be Pool.
	Queue Queue
	// ConcurrencyKey, when set, bounds how many tasks of the same
	// tenant, workflow and key run at once (the workflow's concurrency
	// per key): a task over it waits queued until one of them ends.
	ConcurrencyKey string

	PoolCapacity int // most non-terminal tasks in Pool; <= 0 means unlimited

	// DependsOn are the tasks this one waits for: IDs of the tenant's
	// tasks, or the TaskID of an earlier item of the same Admit call (it
	// names the task that item is answered with, new or replayed). The
	// task stays queued until every one has succeeded.
	DependsOn []string
	// RunOnDependencyFailure: run anyway when a dependency fails, times
	// out or is cancelled, instead of ending failed (dependency_failed).
	RunOnDependencyFailure bool
	// StorageQuota is the tenant's storage quota in bytes when its row sets
	// none (the server's default); <= 0 means unlimited. The item is
	// refused (StorageQuotaExceeded) when its input would take the bytes
	// the tenant keeps (inputs, results, evidence) over the quota.
	StorageQuota int64
}

// InputBytes is what an admitted item's input adds to its tenant's stored
// bytes (a nil input is stored as "null").
func (it *AdmitItem) InputBytes() int64 {
	if it.Input == nil {
		return int64(len("null"))
	}
	return int64(len(it.Input))
}

// QueueOf returns the queue an admitted item waits in.
func (it *AdmitItem) QueueOf() Queue {
	if it.Queue == "" {
		return PoolQueue(it.Pool)
	}
	return it.Queue
}

// AdmitOutcome says what happened to one admission item.
type AdmitOutcome int

const (
	Admitted             AdmitOutcome = iota + 1 // new task; Task is it
	Replayed                                     // same key, same hash; Task is the earlier task
	IdempotencyConflict                          // same key, different hash; Task is nil
	QueueFull                                    // pool capacity reached
	TenantQuotaExceeded                          // tenant in-flight limit reached
	StorageQuotaExceeded                         // the input would take the tenant's stored bytes over its quota
	// DependencyNotFound: a dependency is not a task of the item's tenant
	// (or an earlier item it names was not admitted); nothing is written
	// for the item.
	DependencyNotFound
	// SubmissionsPaused: a pause of the item's pool, tenant or workflow
	// refuses submissions (SetPausedParams.RefuseSubmissions).
	SubmissionsPaused
)

func (o AdmitOutcome) String() string {
	switch o {
	case Admitted:
		return "admitted"
	case Replayed:
		return "replayed"
	case IdempotencyConflict:
		return "idempotency_conflict"
	case QueueFull:
		return "queue_full"
	case TenantQuotaExceeded:
		return "tenant_quota_exceeded"
	case StorageQuotaExceeded:
		return "storage_quota_exceeded"
	case DependencyNotFound:
		return "dependency_not_found"
	case SubmissionsPaused:
		return "submissions_paused"
	}
	return "unknown"
}

// AdmitResult is the outcome of one AdmitItem.
type AdmitResult struct {
	Outcome AdmitOutcome
	Task    *dockettype.Task
}

// ClaimParams asks for up to Limit tasks of one queue.
type ClaimParams struct {
	Now   time.Time
	Queue Queue
	// Tenant, when set, restricts the claim to that tenant's tasks (a
	// worker key that serves one tenant); empty: every tenant, fairly.
	Tenant   string
	Owner    string // node/worker identity recorded on the lease
	Limit    int
	LeaseTTL time.Duration
	// Outcome, when set, receives what held tasks back.
	Outcome *ClaimOutcome
}

// ClaimedTask is a task handed to a worker, with its input.
type ClaimedTask struct {
	Task  *dockettype.Task // State running, LeaseEpoch the new epoch
	Input []byte
	// TraceUnsampled: the task's trace is not sampled (AdmitItem): the
	// attempt's spans are not recorded.
	TraceUnsampled bool
}

// Lease returns the claim's fencing token.
func (c *ClaimedTask) Lease() Lease { return Lease{TaskID: c.Task.ID, Epoch: c.Task.LeaseEpoch} }

// FinishKind is the outcome of one attempt.
type FinishKind int

const (
	FinishSucceed FinishKind = iota + 1 // → succeeded with Result
	FinishFail                          // → failed with Code
	FinishRetry                         // → queued with RunAfter and Code as the last error
	// FinishRelease hands a lease back (the node is shutting down): the
	// task is queued again at once, its attempt is not charged, and the
	// event carries code shutdown.
	FinishRelease
)

// FinishParams is one batch of attempt outcomes.
type FinishParams struct {
	Now   time.Time
	Items []FinishItem
	// HandOff, when set, lets the finish start on the finishing node the
	// tasks its outcomes give concurrency-key slots to.
	HandOff *HandOff
}

// HandOff is the room a finishing node has to start, in the same
// transaction, the next tasks of the concurrency keys its outcomes free
// (docs/flow-control.md, "Hand-off"): up to Limit ready tasks of Queue,
// leased to Owner until Expires, and only while no pause or rate limit is
// in force. The others become ready for any claim, as without a hand-off.
type HandOff struct {
	Queue   Queue
	Owner   string
	Expires time.Time
	Limit   int
	// Started is set by Finish: the tasks it started (running, leased to
	// Owner), with their input, as a claim returns them.
	Started []*ClaimedTask
}

// FinishItem is the outcome of one attempt, fenced by its lease.
type FinishItem struct {
	Lease
	Kind     FinishKind
	Result   []byte          // FinishSucceed
	Code     dockettype.Code // FinishFail, FinishRetry
	Message  string          // FinishFail, FinishRetry: a short reason for the task's own tenant
	RunAfter time.Time       // FinishRetry
}

// FinishResult says whether one FinishItem applied.
type FinishResult struct {
	Applied bool
	State   dockettype.State // the task's state after the call (when it exists)
}

// AppendEvidenceParams records evidence under a lease.
type AppendEvidenceParams struct {
	Now   time.Time
	Lease Lease
	Items []EvidenceItem
}

// EvidenceItem is one evidence record.
type EvidenceItem struct {
	Kind string
	Body []byte // JSON
}

// RefusedLease is a lease a heartbeat could not renew.
type RefusedLease struct {
	Lease
	// State is the task's state when it was refused (cancelled,
	// timed_out, queued again by recovery, …); empty when the task is gone.
	State dockettype.State
}

// HeartbeatParams renews a batch of leases.
type HeartbeatParams struct {
	Now      time.Time
	LeaseTTL time.Duration
	Leases   []Lease
}

// FindExpiredLeasesParams bounds one recovery scan.
type FindExpiredLeasesParams struct {
	Now   time.Time
	Limit int
}

// ExpiredLease is a running task whose lease has expired.
type ExpiredLease struct {
	Lease
	Tenant      string
	Queue       Queue
	Attempt     int
	MaxAttempts int
}

// RecoverLeasesParams recovers a batch found by FindExpiredLeases.
type RecoverLeasesParams struct {
	Now   time.Time
	Items []ExpiredLease
}

// RecoverResult counts what RecoverLeases did.
type RecoverResult struct {
	Requeued int
	Failed   int // attempts exhausted: failed with lease_lost
	Skipped  int // no longer expired, or changed since the scan
	// Recovered lists the leases (as scanned, before the epoch bump) that
	// were requeued or failed.
	Recovered []Lease
}

// FindOverdueParams bounds one deadline scan.
type FindOverdueParams struct {
	Now   time.Time
	Limit int
}

// OverdueTask is a non-terminal task past its deadline.
type OverdueTask struct {
	Lease
	Tenant string
	Queue  Queue
	State  dockettype.State // queued or running at scan time
}

// ExpireTasksParams times out a batch found by FindOverdue.
type ExpireTasksParams struct {
	Now   time.Time
	Items []OverdueTask
}

// CancelParams cancels one task of a tenant.
type CancelParams struct {
	Now    time.Time
	Tenant string
	TaskID string
}

// CancelBatchParams cancels tasks, each of its item's tenant.
type CancelBatchParams struct {
	Now   time.Time
	Items []CancelItem
}

// CancelItem names one task to cancel.
type CancelItem struct {
	Tenant string
	TaskID string
}

// CancelBatchResult is what a batch cancel did to one item's task.
type CancelBatchResult struct {
	NotFound bool
	Changed  bool
	From     dockettype.State // the state before the change
	Previous Lease            // the lease the task had before the change (when Changed)
	Pool     dockettype.Pool  // the task's pool (when Changed)
}

// CancelResult is the task after a cancel.
type CancelResult struct {
	Task     *dockettype.Task
	Changed  bool
	Previous Lease            // the lease the task had before the change
	From     dockettype.State // the state before the change
}

// GetTaskParams names one task of a tenant.
type GetTaskParams struct {
	Tenant string
	TaskID string
	// Now, when set, is the time a queued task's WaitingOn is judged at
	// (a rate limit holds it when it throttled a claim lately).
	Now time.Time
}

// ListTasksParams filters and pages a tenant's tasks.
type ListTasksParams struct {
	Tenant   string
	State    dockettype.State // optional
	Pool     dockettype.Pool  // optional
	Workflow string           // optional: the exact workflow name
	Limit    int
	After    string    // keyset cursor: the last task ID of the previous page
	Now      time.Time // as GetTaskParams.Now
}

// DeleteFinishedParams bounds one retention batch.
type DeleteFinishedParams struct {
	Before time.Time // tasks finished before this are deleted
	Limit  int
}

// Stats is the state of the pools and tenants.
type Stats struct {
	Pools   []PoolStats
	Tenants []*Tenant
}

// PoolStats counts one pool's non-terminal tasks.
type PoolStats struct {
	Pool     dockettype.Pool
	InFlight int // non-terminal tasks: what capacity is checked against
	Queued   int // InFlight - Running
	Running  int
	// RemoteRunning is the part of Running that remote workers hold.
	RemoteRunning int
	// OldestQueuedAt is the creation time of the oldest task waiting to
	// run (nil when none).
	OldestQueuedAt *time.Time
}

// MaxThroughputBuckets bounds the buckets of one Throughput call.
const MaxThroughputBuckets = 10_000

// ThroughputParams is the window of Throughput.
type ThroughputParams struct {
	Since, Until time.Time
	Bucket       time.Duration // whole milliseconds
}

// ThroughputBucket counts the tasks that became terminal in [Start,
// Start+Bucket), by state.
type ThroughputBucket struct {
	Start     time.Time
	Succeeded int
	Failed    int
	TimedOut  int
	Cancelled int
}

// EnsureTenantParams names a tenant to create if missing.
type EnsureTenantParams struct {
	Now time.Time
	ID  string
	// DefaultMaxInFlight is the in-flight limit the tenant gets when this
	// call creates it (0: unlimited). An existing tenant keeps its limit.
	DefaultMaxInFlight int
}

// Tenant is a tenant and its limits.
type Tenant struct {
	ID          string
	MaxInFlight int // 0: unlimited
	Weight      int
	InFlight    int
	CreatedAt   time.Time
	// StorageQuota is the tenant's own storage quota in bytes (0:
	// unlimited), nil when it has none and the server's default applies.
	StorageQuota *int64
	// StoredBytes is what the tenant keeps: the bytes of its tasks'
	// inputs, results and evidence, until retention deletes them.
	StoredBytes int64
}

// UpdateTenantParams changes the fields that are not nil.
type UpdateTenantParams struct {
	Now         time.Time
	Tenant      string
	MaxInFlight *int
	Weight      *int
	// StorageQuota sets the tenant's storage quota in bytes (0:
	// unlimited); NoStorageQuota removes it, so that the server's default
	// applies again.
	StorageQuota *int64
}

// NoStorageQuota, given as UpdateTenantParams.StorageQuota, removes the
// tenant's own quota.
const NoStorageQuota int64 = -1

// CreateAPIKeyParams stores a hashed API key.
type CreateAPIKeyParams struct {
	Now       time.Time
	ID        string // generated by the caller
	Hash      string
	Tenant    string
	Principal string
	Role      dockettype.Role
	// AllTenants: a worker key that serves every tenant's tasks.
	AllTenants bool
}

// APIKey is a stored key: its hash, never the key.
type APIKey struct {
	ID         string
	Hash       string // empty in listings
	Tenant     string
	Principal  string
	Role       dockettype.Role
	AllTenants bool // worker keys only: serves every tenant
	CreatedAt  time.Time
	RevokedAt  *time.Time
}

// RevokeAPIKeyParams revokes one key.
type RevokeAPIKeyParams struct {
	Now time.Time
	ID  string
}

// PublishRuleSetParams publishes one rule set version.
type PublishRuleSetParams struct {
	Now  time.Time
	Hash string // content hash, computed by the caller
	Body []byte
}

// RuleSet is one published, immutable rule set version.
type RuleSet struct {
	Version     string // "v1", "v2", …
	Hash        string
	Body        []byte // nil in listings
	PublishedAt time.Time
}

// WriteProber is the optional readiness probe of a store whose writes can
// fail while its reads succeed (a full disk). A failed write of any call
// makes Ping report ErrWritesFailing; only a probe that writes clears it,
// since a call that writes nothing proves nothing.
type WriteProber interface {
	// ProbeWrite writes one small row in its own transaction.
	ProbeWrite(ctx context.Context) error
}

// Vacuumer is the optional maintenance of a store whose live table needs
// vacuuming more often than its database does on its own (PostgreSQL: see
// postgres/vacuum.go). The queue detects it on a fork, as it detects
// Listener, and runs it on a scheduler of its own.
type Vacuumer interface {
	// Vacuum vacuums the live table when at least MinDead of its rows are
	// dead and no node has vacuumed it within Quiet, and reports whether
	// it did.
	Vacuum(ctx context.Context, params *VacuumParams) (bool, error)
}

// VacuumParams say when the live table is worth a vacuum.
type VacuumParams struct {
	MinDead int
	Quiet   time.Duration
}
