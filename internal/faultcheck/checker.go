package faultcheck

import (
	"bytes"
	"fmt"
	"time"

	"github.com/docket-dev/docket/dockettype"
)

// TaskView is one task as the database holds it, with its history.
type TaskView struct {
	Task   *dockettype.Task
	Events []dockettype.Event // oldest first
}

// Snapshot is what the database holds for a run's tenants after the drain,
// read twice: through the store contract and through the HTTP API.
type Snapshot struct {
	// Store holds every task of the run's tenants, listed and read through
	// the store contract (ListTasks, GetTask, ListEvents).
	Store map[string]*TaskView
	// API holds the same tasks read over HTTP (GET /v1/tasks/{id} and its
	// events), for the tasks it could read; a task missing here that the
	// store holds is a disagreement.
	API map[string]*TaskView
}

// Limits are the admission bounds a run configured on its server.
type Limits struct {
	PoolCapacity int            // the online pool's capacity; 0: unbounded
	Tenants      map[string]int // max in flight per tenant; 0: unbounded
}

// CheckInput is everything the checker judges.
type CheckInput struct {
	// Ops is the history: every call, and every fault injected (a term
	// fault names the process a graceful stop ended).
	Ops      []Op
	Snapshot Snapshot
	// Execs are the probe's execution logs, each process's records in the
	// order written, with the checker's term marks among them.
	Execs  []ExecRecord
	Limits Limits
	// UnfinishedAtDrain are the tasks still queued or running when the
	// drain's bound (DrainTimeout after the faults healed) passed: stuck,
	// even if they finished later (by their deadline, say).
	UnfinishedAtDrain map[string]dockettype.State
	DrainTimeout      time.Duration
	// TenantInFlight is each tenant's in-flight count as the store reports
	// it (GetTenant) after the drain: its unfinished tasks, if every
	// reservation was released exactly once.
	TenantInFlight map[string]int
	// Logs are the servers' log lines (stderr), by server.
	Logs map[string][]string
	// NodesStayUp says that no node was killed, frozen, stopped or cut
	// from its database during the run: a lease recovered then was taken
	// from a worker that was alive and heartbeating.
	NodesStayUp bool
	// Schedules are the periodic schedules the run fired (the schedules
	// scenario), with their tasks.
	Schedules []ScheduleView
	// Dependencies are the dependency graphs the run submitted (the
	// dependencies scenario), with their tasks.
	Dependencies *DependencyView
	// Flow is the flow scenario's rate-limited, keyed work.
	Flow *FlowView
}

// Anomaly kinds: each breaks a guarantee and fails the run.
const (
	AnomalyLost        = "lost"                     // an acknowledged task is missing, or its key no longer names it
	AnomalyDuplicated  = "duplicated"               // a key made two tasks, or a task no key explains
	AnomalyOverwritten = "overwritten_terminal"     // a second terminal event, a transition after one, or a terminal state that changed
	AnomalyStuck       = "stuck_after_drain"        // an acknowledged task not terminal after the drain
	AnomalyLifecycle   = "lifecycle"                // events that do not follow the lifecycle, or counters that disagree with them
	AnomalyAdmission   = "admission_over_limit"     // more tasks in flight than the pool's capacity or a tenant's limit
	AnomalyExecutions  = "executions_over_attempts" // an execution without a claim (attempt), or two under one lease
	AnomalyFence       = "fence"                    // a result not written under the lease of the execution that produced it
	AnomalyViews       = "views_disagree"           // the store and the HTTP API answer differently
	AnomalyReplay      = "replay_refused"           // the same key and request answered 409 idempotency_conflict
	AnomalyLogLeak     = "log_leak"                 // a server log line carries a payload or database error text
	AnomalyReservation = "reservation_leak"         // a tenant's in-flight count disagrees with its unfinished tasks
	AnomalyOutcomeLost = "outcome_lost"             // an execution finished during a graceful stop, and its task does not carry its outcome
	AnomalyCharged     = "attempt_charged"          // an execution numbered other than its claims say, or a lease a graceful stop left to lapse
	AnomalyClaimLost   = "claim_lost"               // a claim that ran nothing and lapsed, in a run whose only faults were graceful stops
	AnomalyNotRerun    = "released_not_rerun"       // a lease handed back at shutdown whose task never ran again
	// AnomalyScheduleTwice: a schedule made two tasks for one fire time,
	// or one for a time that is not its own (after its pause, off its
	// cron expression).
	AnomalyScheduleTwice = "schedule_fired_twice"
	// AnomalyScheduleMissed: a schedule made no task for a fire time
	// while a node and the database were up.
	AnomalyScheduleMissed = "schedule_missed"
	// AnomalyDependencyEarly: a dependent started before all its
	// dependencies succeeded (ended, for one that runs anyway), or ran
	// though one failed.
	AnomalyDependencyEarly = "dependency_started_early"
	// AnomalyDependencyWaiting: a dependent still waiting (or live) once
	// its dependencies are terminal, or ended otherwise than with
	// dependency_failed after one did not succeed.
	AnomalyDependencyWaiting = "dependency_left_waiting"
	// AnomalyFlowLimit: a one-second window with more starts than a rate
	// limit allows, or a concurrency key with more running than its limit.
	AnomalyFlowLimit = "flow_limit_exceeded"
)

// anomalyKinds in the order reports print them.
var anomalyKinds = []string{AnomalyLost, AnomalyDuplicated, AnomalyOverwritten, AnomalyStuck,
	AnomalyLifecycle, AnomalyAdmission, AnomalyExecutions, AnomalyFence, AnomalyViews, AnomalyReplay, AnomalyLogLeak, AnomalyReservation,
	AnomalyOutcomeLost, AnomalyCharged, AnomalyClaimLost, AnomalyNotRerun, AnomalyScheduleTwice, AnomalyScheduleMissed,
	AnomalyDependencyEarly, AnomalyDependencyWaiting, AnomalyFlowLimit}

// Result is the checker's verdict on one run.
type Result struct {
	Operations    int `json:"operations"` // client calls (submits, cancels, reads), faults excluded
	Submits       int `json:"submits"`
	Cancels       int `json:"cancels"`
	Reads         int `json:"reads"`
	Faults        int `json:"faults"`
	Indeterminate int `json:"indeterminate"` // calls whose outcome the client could not know
	// Acknowledged is the number of keys a submit was answered with a
	// task for (201 or 200), in the load or when resolved after it.
	Acknowledged int `json:"acknowledged"`
	// ResolvedCommitted counts keys never acknowledged during the load
	// whose replay after it found a task: an indeterminate call had
	// committed.
	ResolvedCommitted int `json:"resolved_committed"`
	// CommittedDespite503 counts keys answered only with
	// store_unavailable (which says nothing was admitted) whose replay
	// found a task.
	CommittedDespite503 int `json:"committed_despite_503"`
	// Unresolved counts keys never answered with a task whose replay
	// after the load got no answer either: whether they made a task is
	// unknown.
	Unresolved int                      `json:"unresolved"`
	Tasks      int                      `json:"tasks"` // tasks the run's tenants hold
	States     map[dockettype.State]int `json:"states"`
	// FailedCodes counts the error codes of the failed tasks.
	FailedCodes map[string]int `json:"failed_codes"`

	Lost                 int `json:"lost"`
	Duplicated           int `json:"duplicated"`
	OverwrittenTerminals int `json:"overwritten_terminals"`
	StuckAfterDrain      int `json:"stuck_after_drain"`

	Executions int `json:"executions"` // probe executions started (execution logs)
	Claims     int `json:"claims"`     // queued → running events
	// ReExecuted counts tasks run again after an execution that did not
	// end in a retryable failure (a lost lease, a crash): the work of an
	// execution was repeated.
	ReExecuted      int `json:"re_executed"`
	LeaseRecoveries int `json:"lease_recoveries"` // lease_lost events
	// DiscardedResults counts executions that finished (their end line
	// is logged) whose outcome the task does not carry: a later lease
	// took over.
	DiscardedResults int `json:"discarded_results"`
	// GracefulStops counts the servers stopped with SIGTERM that exited by
	// themselves, with status 0, in time.
	GracefulStops int `json:"graceful_stops"`
	// FinishedInGrace counts the executions of those servers that ended
	// with an outcome (succeeded, retry, failure) after the SIGTERM: each
	// outcome must be kept.
	FinishedInGrace int `json:"finished_in_grace"`
	// HandedBack counts the leases handed back at shutdown (running →
	// queued with code shutdown, the attempt not charged).
	HandedBack int `json:"handed_back"`
	// PeakInFlight is the largest number of the run's tasks in flight at
	// once, by pool ("pool:online") and tenant, reconstructed from the
	// events in commit order.
	PeakInFlight map[string]int `json:"peak_in_flight"`
	// Limits are the bounds the peaks are checked against, by the same
	// names (0: unbounded).
	Limits map[string]int `json:"limits"`
	// ScheduleFireTimes counts the fire times of the run's schedules in
	// their windows; ScheduleFired those that made a task.
	ScheduleFireTimes int `json:"schedule_fire_times,omitempty"`
	// DependencyGraphs counts the graphs the dependencies scenario
	// admitted, Dependents the tasks with dependencies it checked.
	DependencyGraphs int `json:"dependency_graphs,omitempty"`
	Dependents       int `json:"dependents,omitempty"`
	// DependentsFailed counts the dependents that ended with
	// dependency_failed.
	DependentsFailed int `json:"dependents_failed,omitempty"`
	ScheduleFired    int `json:"schedule_fired,omitempty"`
	// The flow scenario's tasks, those that ended, their starts, the most
	// starts in one second and the most running tasks of one key.
	FlowTasks         int `json:"flow_tasks,omitempty"`
	FlowFinished      int `json:"flow_finished,omitempty"`
	FlowStarts        int `json:"flow_starts,omitempty"`
	FlowPeakPerSecond int `json:"flow_peak_per_second,omitempty"`
	FlowPeakPerKey    int `json:"flow_peak_per_key,omitempty"`
	// FlowHandOffs counts the starts made by the finish that freed the
	// key's slot (store.HandOff).
	FlowHandOffs int `json:"flow_hand_offs,omitempty"`

	// Anomalies counts each kind (see Anomaly*); Examples gives a few of
	// each, with task IDs.
	Anomalies map[string]int      `json:"anomalies"`
	Examples  map[string][]string `json:"examples,omitempty"`
	// Findings are facts worth a look that break no guarantee the README
	// lists ("Guarantees and how they are tested"), e.g. leases recovered
	// from live workers.
	Findings []string `json:"findings,omitempty"`
}

// AnomalyCount is the total of every kind.
func (r *Result) AnomalyCount() int {
	n := 0
	for _, c := range r.Anomalies {
		n += c
	}
	return n
}

const maxExamples = 5

func (r *Result) flag(kind, format string, a ...any) {
	r.Anomalies[kind]++
	if len(r.Examples[kind]) < maxExamples {
		r.Examples[kind] = append(r.Examples[kind], fmt.Sprintf(format, a...))
	}
}

// A pass checks one invariant over the parsed input: it flags in r what
// breaks the invariant, and fills the figures of r it owns. Each pass is
// in a file of its own, check_<invariant>.go.
type pass func(p *parsed, r *Result)

// passes run in this order. A pass may read the figures tally and earlier
// passes filled; none reads another's anomalies.
var passes = []pass{
	checkLost,
	checkDuplicated,
	checkStuck,
	checkTerminalOnce,
	checkLifecycle,
	checkAdmission,
	checkExecutions,
	checkFenced,
	checkViews,
	checkLogs,
	checkReservations,
	checkReplay,
	checkOutcomesKept,
	checkAttempts,
	checkClaimsRun,
	checkReleases,
	checkSchedules,
	checkDependencies,
	checkFlow,
}

// Check judges a run: the history of calls against what the database holds
// after the drain, and the executions the probe logged. It is pure.
func Check(in *CheckInput) *Result {
	r := &Result{
		States:       map[dockettype.State]int{},
		FailedCodes:  map[string]int{},
		PeakInFlight: map[string]int{},
		Limits:       map[string]int{"pool:" + string(dockettype.PoolOnline): in.Limits.PoolCapacity},
		Anomalies:    map[string]int{},
		Examples:     map[string][]string{},
	}
	for _, k := range anomalyKinds {
		r.Anomalies[k] = 0
	}
	for t, l := range in.Limits.Tenants {
		r.Limits[t] = l
	}
	p := parse(in)
	tally(p, r)
	for _, check := range passes {
		check(p, r)
	}
	for _, k := range anomalyKinds {
		if len(r.Examples[k]) == 0 {
			delete(r.Examples, k)
		}
	}
	r.Lost = r.Anomalies[AnomalyLost]
	r.Duplicated = r.Anomalies[AnomalyDuplicated]
	r.OverwrittenTerminals = r.Anomalies[AnomalyOverwritten]
	r.StuckAfterDrain = r.Anomalies[AnomalyStuck]
	return r
}

// eventChain renders events compactly: queued>running(1)>succeeded(1).
func eventChain(evs []dockettype.Event) string {
	var b bytes.Buffer
	for i, ev := range evs {
		if i > 0 {
			b.WriteString(">")
		}
		fmt.Fprintf(&b, "%s(%d)", ev.To, ev.Epoch)
	}
	return b.String()
}
