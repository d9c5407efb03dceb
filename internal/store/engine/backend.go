package engine

import (
	"context"
	"strings"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/store/fairshare"
)

// Backend is what a SQL backend provides: connections for the engine's
// plain statements, write transactions made of the steps in Tx, and the
// SQL that differs between backends.
type Backend interface {
	// Read runs fn on a read connection, held for fn's run, and maps the
	// errors it returns onto the store's sentinels. Waiting for the
	// connection is bounded by ctx; a wait that ends with ctx's deadline
	// while every connection is in use is store.ErrBusy (see Busy).
	Read(ctx context.Context, op string, fn func(q Querier) error) error
	// Update runs fn in a write transaction of plain statements (admin,
	// rule sets, workflows, workers), mapping errors and waits like Read.
	Update(ctx context.Context, op string, fn func(q Querier) error) error
	// Dialect is the backend's SQL where the two differ.
	Dialect() *Dialect

	// Write runs fn in one write transaction and maps the errors it
	// returns onto the store's sentinels. A backend may run fn again when
	// the database aborted the transaction for a conflict, so fn keeps no
	// state across calls.
	Write(ctx context.Context, op string, fn func(tx Tx) error) error
	// Fork returns a backend on the same database with its own connection
	// budget.
	Fork(name string, opts store.ForkOptions) (Backend, error)
	// Close releases the backend's connections.
	Close() error
}

// Tx is one write transaction's steps. Each step is one or a few
// statements; none decides anything the engine could decide.
type Tx interface {
	admitSteps
	claimSteps
	transitionSteps
	dependencySteps
	flowSteps

	// AddInFlight adds to the in-flight counters and to the tenants'
	// stored bytes (the same rows). Admission adds to the gate slots it
	// holds locked; anything else (a release, a result, evidence, a
	// deletion) goes to a release slot.
	AddInFlight(deltas []CounterDelta, release bool) error
	// AddQueued changes ready counts. A tenant whose count goes from zero
	// to positive joins at the queue's current virtual time (the lowest of
	// the tenants with ready work; when there is none, the highest of all),
	// so it neither waits behind a backlog nor replays credit it banked
	// while idle.
	AddQueued(deltas []QueueDelta) error
	// InsertEvents appends to the history, in order.
	InsertEvents(events []Event, now time.Time) error
	// Notify tells the other nodes, when the transaction commits, that it
	// made work ready in queues and finished tasks (see store.Listener). A
	// backend with one node only does nothing.
	Notify(ready []store.Queue, finished []string) error
}

type admitSteps interface {
	// Bindings returns the existing idempotency bindings among keys.
	Bindings(keys []TenantKey) (map[TenantKey]Binding, error)
	// EnsureTenants creates the tenants that do not exist, with limit as
	// their in-flight limit, and their counter rows.
	EnsureTenants(ids []string, limit int, now time.Time) error
	// LockGates locks the gate rows of the pools and tenants (each sorted)
	// and returns their in-flight counts and the tenants' limits.
	LockGates(pools []dockettype.Pool, tenants []string) (*Gates, error)
	// InsertBindings inserts bindings in the order given (the engine sorts
	// them by tenant and key), skipping those whose key another
	// transaction bound first, and returns the keys it inserted.
	InsertBindings(rows []Binding, now time.Time) (map[TenantKey]bool, error)
	// InsertTasks inserts the admitted tasks: the immutable record with
	// its input, and the live row (queued; delayed when RunAt is after
	// now; waiting on its concurrency key, run_after HeldUntil, when held
	// names it; holding a slot of its key when it has one and is not
	// held).
	InsertTasks(items []*store.AdmitItem, held map[string]bool, now time.Time) error
	// ReadTasks returns the tasks among ids, any tenant.
	ReadTasks(ids []string) (map[string]*dockettype.Task, error)
}

// GateReader is the optional step of a backend whose write transactions
// run concurrently (PostgreSQL): it reads the gates without locking them,
// so that an admission can write its rows first and hold the gate locks
// only for its counters and its commit (see admit).
type GateReader interface {
	// ReadGates returns the pools' and tenants' in-flight counts and the
	// tenants' limits as committed, locking nothing.
	ReadGates(pools []dockettype.Pool, tenants []string) (*Gates, error)
}

type claimSteps interface {
	// PromoteDue makes up to limit delayed tasks of queue whose run_after
	// has passed ready, and returns the tenant of each, and the flow
	// rules that pause or rate-limit anything (in the same round trip).
	PromoteDue(queue store.Queue, now time.Time, limit int) ([]string, []store.FlowRule, error)
	// ReadyTenants returns up to limit tenants with ready work in queue,
	// lowest virtual time first; only tenant when it is set; none of
	// except.
	ReadyTenants(queue store.Queue, tenant string, limit int, except []string) ([]fairshare.Tenant, error)
	// Take claims, per grant, up to Count ready tasks of the tenant in
	// dispatch order (priority, then age), skipping rows other
	// transactions hold: each goes to running (attempt+1, epoch+1, the
	// lease, started_at on its first claim) and comes back with its input,
	// in any order.
	Take(queue store.Queue, grants []fairshare.Grant, owner string, expires, now time.Time) ([][]*store.ClaimedTask, error)
	// SetTenantQueues writes tenants' virtual times and ready counts after
	// a claim, in the order given (the engine sorts them by tenant).
	SetTenantQueues(queue store.Queue, rows []TenantQueue) error
}

type transitionSteps interface {
	// LockLive locks the live rows among ids in ID order, so that two
	// transactions changing overlapping sets queue instead of deadlocking.
	LockLive(ids []string) error
	// End makes each row's task terminal if it is still live in From (any
	// live state when From is empty) under Epoch: the live row leaves the
	// queue and the result row is written. It returns the rows it changed.
	End(rows []End, now time.Time) ([]Moved, error)
	// Requeue moves each row's task, still running under Epoch, back to
	// queued. It returns the rows it changed.
	Requeue(rows []Requeue, now time.Time) ([]Moved, error)
	// States returns the current state of each existing task among ids.
	States(ids []string) (map[string]dockettype.State, error)
	// Renew extends the leases still held to expires and returns them.
	Renew(leases []store.Lease, expires time.Time) ([]store.Lease, error)
	// LeaseAttempt share-locks the task if it runs under lease and returns
	// its attempt and tenant; ok is false for a stale lease.
	LeaseAttempt(lease store.Lease) (attempt int, tenant string, ok bool, err error)
	// InsertEvidence records evidence of an attempt.
	InsertEvidence(lease store.Lease, attempt int, items []store.EvidenceItem, now time.Time) error
	// LockLiveTasks locks the live tasks among ids in ID order, for a
	// cancel, and reports each one's tenant, state and epoch by ID.
	LockLiveTasks(ids []string) (map[string]TaskState, error)
	// FinishedTasks reports the tenant, state and epoch of the terminal
	// tasks among ids, by ID.
	FinishedTasks(ids []string) (map[string]TaskState, error)
	// FinishedBefore returns up to limit terminal tasks that finished
	// before the time, oldest first.
	FinishedBefore(before time.Time, limit int) ([]string, error)
	// DeleteTasks deletes terminal tasks with their input, result, events,
	// evidence and idempotency binding, and returns the bytes of inputs,
	// results and evidence it deleted, per tenant.
	DeleteTasks(ids []string) (map[string]int64, error)
	// Revive makes each row's task, if it is still failed, timed_out or
	// cancelled and of the row's tenant, live again in the row's Queue
	// (which the engine's caller guarantees is of the task's pool): its result row goes, and
	// its live row is queued and ready (attempt 0, the result's epoch+1, a
	// deadline of its original timeout from now). It returns the rows it
	// changed, From the state the task left and ResultBytes the bytes of
	// the result it deleted.
	Revive(rows []Revive, now time.Time) ([]Moved, error)
	// LockFinished locks the result rows among ids in ID order and returns
	// those tasks (terminal) with their tenant.
	LockFinished(ids []string) ([]Finished, error)
}

// Finished is a terminal task of a tenant.
type Finished struct {
	TaskID, Tenant string
}

// Revive queues a terminal task again (a retry), if it is of Tenant.
type Revive struct {
	TaskID string
	Tenant string
	Queue  store.Queue
}

type dependencySteps interface {
	// MarkDependencies reads the tasks among ids (any tenant), live or
	// terminal, and marks the live ones as having dependents, locking them
	// in ID order: a transaction ending one of them after this one commits
	// sees the dependents this one writes.
	MarkDependencies(ids []string) (map[string]DependencyRow, error)
	// InsertDependencies writes the edges, makes each of waits wait (its
	// pending count and policy, and a run_after no promotion reaches), and
	// marks the new tasks among depended as having dependents.
	InsertDependencies(edges []Edge, waits []Wait, depended []string) error
	// Dependents returns, one row per edge, the live tasks still waiting
	// on any of ids, locked in task ID order.
	Dependents(ids []string) ([]Dependent, error)
	// Release lowers each row's task's pending count by N; a task whose
	// count reaches zero stops waiting: its run_after becomes its run_at
	// when that is after now, else NULL (ready). It returns the tasks that
	// stopped waiting (Ready: ready now).
	Release(rows []Release, now time.Time) ([]Moved, error)
}

// DependencyRow is a task named as a dependency.
type DependencyRow struct {
	Tenant string
	State  dockettype.State
}

// Edge says that TaskID depends on DependsOn; Ord is its place in the
// dependent's list.
type Edge struct {
	DependsOn, TaskID string
	Ord               int
}

// Wait makes a newly admitted task wait for Pending dependencies.
type Wait struct {
	TaskID  string
	Pending int
	Run     bool // on_dependency_failure "run"
}

// Dependent is a waiting task found through one of its edges.
type Dependent struct {
	TaskID, DependsOn string
	Epoch             int64
	Run               bool
}

// Release resolves N of a waiting task's dependencies.
type Release struct {
	TaskID string
	N      int
}

// TenantKey is an idempotency key of a tenant.
type TenantKey struct {
	Tenant, Key string
}

// Binding ties a tenant's idempotency key to the task it admitted.
type Binding struct {
	TenantKey
	RequestHash string
	TaskID      string
}

// Gates are the in-flight counts and limits an admission checks, and the
// pauses that refuse submissions.
type Gates struct {
	Pools   map[dockettype.Pool]int64
	Tenants map[string]TenantGate
	// Refusing: the targets whose pause refuses submissions (nil: none).
	Refusing map[store.FlowTarget]bool
}

// RefusingGatesSQL is the part of a backend's gates query (after UNION
// ALL) that reads the pauses refusing submissions, as rows of AddRow.
// Such rules are few: the table of rules is read whole.
const RefusingGatesSQL = `SELECT 'refuse_' || scope, key, 0, 0, 0, 0 FROM flow_rules WHERE refuse_submissions`

// AddRow adds one row of a backend's gates query to g: a pool's or a
// tenant's counts (scope ScopePool, ScopeTenant), a tenant's limits
// (scope "limit": limit and quota), or a pause that refuses submissions
// (scope "refuse_" + the flow scope).
func (g *Gates) AddRow(scope, key string, n, bytes int64, limit int, quota int64) {
	tg := g.Tenants[key]
	switch {
	case scope == ScopePool:
		g.Pools[dockettype.Pool(key)] = n
		return
	case scope == ScopeTenant:
		tg.InFlight, tg.StoredBytes = n, bytes
	case strings.HasPrefix(scope, "refuse_"):
		if g.Refusing == nil {
			g.Refusing = map[store.FlowTarget]bool{}
		}
		g.Refusing[store.FlowTarget{Scope: strings.TrimPrefix(scope, "refuse_"), Key: key}] = true
		return
	default:
		tg.MaxInFlight, tg.StorageQuota = limit, quota
	}
	g.Tenants[key] = tg
}

// refuses reports whether a pause refuses an item of this pool, tenant
// and workflow.
func (g *Gates) refuses(pool dockettype.Pool, tenant, workflow string) bool {
	return g.Refusing != nil && (g.Refusing[store.FlowTarget{Scope: store.ScopePool, Key: string(pool)}] ||
		g.Refusing[store.FlowTarget{Scope: store.ScopeTenant, Key: tenant}] ||
		g.Refusing[store.FlowTarget{Scope: store.ScopeWorkflow, Key: workflow}])
}

// TenantGate is a tenant's in-flight count and limit (0: unlimited), and
// its stored bytes and storage quota.
type TenantGate struct {
	InFlight    int64
	MaxInFlight int
	StoredBytes int64
	// StorageQuota is the tenant's own quota (0: unlimited), or
	// NoStorageQuota when its row sets none.
	StorageQuota int64
}

// NoStorageQuota is TenantGate.StorageQuota for a tenant whose row sets no
// quota: the admission item's default applies.
const NoStorageQuota = store.NoStorageQuota

// Counter scopes.
const (
	ScopePool   = "pool"
	ScopeTenant = "tenant"
)

// CounterDelta changes one in-flight counter and, for a tenant, its
// stored bytes.
type CounterDelta struct {
	Scope, Key string
	N          int64
	Bytes      int64
}

// QueueDelta changes a tenant's ready count in a queue.
type QueueDelta struct {
	Queue  store.Queue
	Tenant string
	N      int
}

// TenantQueue is what a claim does to a tenant's fair-dispatch row: its
// virtual time advances by Charge and its ready count drops by Taken. Both
// are deltas, so claims on several nodes that serve the same tenant at
// once each count in full.
type TenantQueue struct {
	Tenant string
	Charge float64
	Taken  int
}

// Event is one history row.
type Event struct {
	TaskID   string
	From, To dockettype.State
	Epoch    int64
	Code     dockettype.Code
	By       dockettype.Actor // who, for a client's change (a retry); zero otherwise
}

// End makes a live task terminal.
type End struct {
	TaskID      string
	Epoch       int64
	From        dockettype.State // queued or running; empty: either
	To          dockettype.State // terminal
	BumpEpoch   bool             // fence out the current lease holder (cancel, timeout, recovery)
	Code        dockettype.Code
	Message     string
	Result      []byte
	DeadlineDue bool // only if the deadline has passed at now
	LeaseDue    bool // only if the lease has expired at now
}

// TaskState is a task's tenant, state and epoch, as a cancel reads them.
type TaskState struct {
	Tenant string
	State  dockettype.State
	Epoch  int64
}

// Requeue moves a running task back to queued.
type Requeue struct {
	TaskID    string
	Epoch     int64
	BumpEpoch bool      // recovery: fence out the lost worker
	Uncharge  bool      // the attempt does not count (a lease handed back at shutdown)
	RunAfter  time.Time // zero: ready now
	Code      dockettype.Code
	Message   string
	LeaseDue  bool // only if the lease has expired at now
}

// Moved is a task a transition changed.
type Moved struct {
	TaskID string
	Tenant string
	Queue  store.Queue // its pool is Queue.Pool()
	From   dockettype.State
	Epoch  int64 // the epoch after the change
	Ready  bool  // End: it was ready (queued, not delayed); Requeue, Release: it is ready now
	// HasDependents (End): some task depends on this one.
	HasDependents bool
	// End: the task's workflow and concurrency key, and whether it held
	// a slot of the key (then the end frees it).
	Workflow, Key string
	KeySlot       bool
	// ResultBytes (Revive): the bytes of the result row it deleted.
	ResultBytes int64
}
