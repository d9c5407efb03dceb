package faultcheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
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
	Ops      []Op
	Snapshot Snapshot
	Execs    []ExecRecord
	Limits   Limits
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
	// NodesStayUp says that no node was killed, frozen or cut from its
	// database during the run: a lease recovered then was taken from a
	// worker that was alive and heartbeating.
	NodesStayUp bool
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
)

// anomalyKinds in the order reports print them.
var anomalyKinds = []string{AnomalyLost, AnomalyDuplicated, AnomalyOverwritten, AnomalyStuck,
	AnomalyLifecycle, AnomalyAdmission, AnomalyExecutions, AnomalyFence, AnomalyViews, AnomalyReplay, AnomalyLogLeak, AnomalyReservation}

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
	// PeakInFlight is the largest number of the run's tasks in flight at
	// once, by pool ("pool:online") and tenant, reconstructed from the
	// events in commit order.
	PeakInFlight map[string]int `json:"peak_in_flight"`
	// Limits are the bounds the peaks are checked against, by the same
	// names (0: unbounded).
	Limits map[string]int `json:"limits"`

	// Anomalies counts each kind (see Anomaly*); Examples gives a few of
	// each, with task IDs.
	Anomalies map[string]int      `json:"anomalies"`
	Examples  map[string][]string `json:"examples,omitempty"`
	// Findings are facts worth a look that break no guarantee of
	// DESIGN.md (e.g. leases recovered from live workers).
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

type tenantKey struct{ tenant, key string }

// Check judges a run: the history of calls against what the database holds
// after the drain, and the executions the probe logged.
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
	db := in.Snapshot.Store
	if db == nil {
		db = map[string]*TaskView{}
	}

	// The history: what each key was answered, and every terminal state a
	// client saw.
	keyTasks := map[tenantKey][]string{} // distinct task IDs, in answer order
	acked := map[tenantKey]bool{}        // a submit was answered with a task
	ackedInLoad := map[tenantKey]bool{}  // … during the load
	replayedInResolve := map[tenantKey]bool{}
	resolved := map[tenantKey]bool{} // keys replayed after the load → a definite answer came
	only503 := map[tenantKey]bool{}
	taskOwner := map[string]tenantKey{}
	type sighting struct {
		state         dockettype.State
		invoked, done time.Time
		op            int
	}
	seen := map[string][]sighting{}
	var notFound []Op // reads and cancels answered 404
	for _, op := range in.Ops {
		switch op.Kind {
		case OpFault:
			r.Faults++
			if op.Fault == FaultDropResponse && op.TaskID != "" {
				// The server committed this task for the key; the client
				// was not told.
				k := tenantKey{op.Tenant, op.Key}
				if !slices.Contains(keyTasks[k], op.TaskID) {
					keyTasks[k] = append(keyTasks[k], op.TaskID)
				}
				if _, ok := taskOwner[op.TaskID]; !ok {
					taskOwner[op.TaskID] = k
				}
			}
			continue
		case OpSubmit:
			r.Submits++
		case OpCancel:
			r.Cancels++
		case OpRead:
			r.Reads++
		}
		r.Operations++
		if op.Outcome == Indeterminate {
			r.Indeterminate++
		}
		if (op.Kind == OpRead || op.Kind == OpCancel) && op.Status == http.StatusNotFound {
			notFound = append(notFound, op)
		}
		if op.Kind == OpSubmit {
			k := tenantKey{op.Tenant, op.Key}
			if op.Status == http.StatusConflict {
				r.flag(AnomalyReplay, "key %s/%s, sent with the same request every time, was answered idempotency_conflict (op %d)", op.Tenant, op.Key, op.Index)
			}
			if op.Phase == PhaseLoad {
				if _, ok := only503[k]; !ok {
					only503[k] = true
				}
				if op.Outcome != Indeterminate || op.Status != http.StatusServiceUnavailable {
					only503[k] = false
				}
			}
			if op.Outcome == OK && op.TaskID != "" {
				if !slices.Contains(keyTasks[k], op.TaskID) {
					keyTasks[k] = append(keyTasks[k], op.TaskID)
				}
				acked[k] = true
				if op.Phase == PhaseLoad {
					ackedInLoad[k] = true
				}
				if op.Phase == PhaseResolve && op.Replayed {
					replayedInResolve[k] = true
				}
				if _, ok := taskOwner[op.TaskID]; !ok {
					taskOwner[op.TaskID] = k
				}
			}
			if op.Phase == PhaseResolve {
				if _, ok := resolved[k]; !ok {
					resolved[k] = false
				}
				if op.Outcome != Indeterminate {
					resolved[k] = true
				}
			}
		}
		if op.Outcome == OK && op.TaskID != "" && op.State != "" {
			seen[op.TaskID] = append(seen[op.TaskID], sighting{state: op.State,
				invoked: op.Invoked, done: op.Complete, op: op.Index})
		}
	}

	// One task per key, and every acknowledged task held.
	keys := make([]tenantKey, 0, len(keyTasks))
	for k := range keyTasks {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i].tenant < keys[j].tenant || keys[i].tenant == keys[j].tenant && keys[i].key < keys[j].key
	})
	for _, k := range keys {
		ids := keyTasks[k]
		if acked[k] {
			r.Acknowledged++
		}
		if !ackedInLoad[k] && replayedInResolve[k] {
			r.ResolvedCommitted++
			if only503[k] {
				r.CommittedDespite503++
			}
		}
		if len(ids) > 1 {
			r.flag(AnomalyDuplicated, "key %s/%s was answered with %d tasks: %v", k.tenant, k.key, len(ids), ids)
		}
		for _, id := range ids {
			tv, ok := db[id]
			if !ok {
				r.flag(AnomalyLost, "task %s (key %s/%s) was committed and is not in the database", id, k.tenant, k.key)
				continue
			}
			if tv.Task.Tenant != k.tenant {
				r.flag(AnomalyLost, "task %s (key %s/%s) belongs to tenant %s", id, k.tenant, k.key, tv.Task.Tenant)
				continue
			}
			if st, ok := in.UnfinishedAtDrain[id]; ok && acked[k] {
				r.flag(AnomalyStuck, "task %s was still %s %s after the faults healed (it ended %s, %s)",
					id, st, in.DrainTimeout, tv.Task.State, eventChain(tv.Events))
				continue
			}
			if !tv.Task.State.Terminal() && acked[k] {
				r.flag(AnomalyStuck, "task %s is %s after the drain", id, tv.Task.State)
			}
		}
	}

	for _, op := range notFound {
		if k, ok := taskOwner[op.TaskID]; ok && acked[k] {
			r.flag(AnomalyLost, "task %s (key %s/%s) was answered not_found (op %d)", op.TaskID, k.tenant, k.key, op.Index)
		}
	}

	for k, ok := range resolved {
		if !ok && !acked[k] {
			r.Unresolved++
		}
	}

	// Every task of the run's tenants is explained by exactly one key.
	ids := make([]string, 0, len(db))
	for id := range db {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		tv := db[id]
		r.Tasks++
		r.States[tv.Task.State]++
		if tv.Task.State == dockettype.StateFailed && tv.Task.Error != nil {
			r.FailedCodes[string(tv.Task.Error.Code)]++
		}
		if _, ok := taskOwner[id]; !ok {
			why := "a key that made a second task"
			if r.Unresolved > 0 {
				why += fmt.Sprintf(", or the task of one of the %d keys whose replay got no answer", r.Unresolved)
			}
			r.flag(AnomalyDuplicated, "task %s (tenant %s, %s) was made by no answered submit: %s", id, tv.Task.Tenant, tv.Task.State, why)
		}
	}

	// Terminal states: one terminal event, nothing after it, and every
	// terminal state a client saw is the final one.
	for _, id := range ids {
		tv := db[id]
		if msg := terminalProblem(tv); msg != "" {
			r.flag(AnomalyOverwritten, "task %s: %s", id, msg)
			continue
		}
		sights := seen[id]
		flagged := false
		for _, s := range sights {
			if s.state.Terminal() && s.state != tv.Task.State {
				r.flag(AnomalyOverwritten, "task %s: a client was shown %s (op %d), the task ended %s", id, s.state, s.op, tv.Task.State)
				flagged = true
				break
			}
		}
		if flagged {
			continue
		}
		// A terminal state once shown is shown by every later answer.
		for _, a := range sights {
			if !a.state.Terminal() {
				continue
			}
			for _, b := range sights {
				if b.invoked.After(a.done) && b.state != a.state {
					r.flag(AnomalyOverwritten, "task %s: shown %s (op %d), then %s (op %d)", id, a.state, a.op, b.state, b.op)
					flagged = true
					break
				}
			}
			if flagged {
				break
			}
		}
	}
	for _, id := range ids {
		for _, msg := range lifecycleProblems(db[id]) {
			r.flag(AnomalyLifecycle, "task %s: %s", id, msg)
		}
	}

	checkAdmission(r, db, in.Limits)
	checkExecutions(r, db, in.Execs, in.NodesStayUp)
	checkViews(r, in.Snapshot)
	checkLogs(r, in.Logs)
	checkReservations(r, db, in.TenantInFlight)
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

// terminalProblem says what is wrong with a task's terminal history, if
// anything: exactly one terminal event, the last, naming the task's state.
func terminalProblem(tv *TaskView) string {
	terminal, at := 0, -1
	for i, ev := range tv.Events {
		if ev.To.Terminal() {
			terminal++
			if at < 0 {
				at = i
			}
		}
	}
	switch {
	case terminal > 1:
		return fmt.Sprintf("%d terminal events (%s)", terminal, eventChain(tv.Events))
	case terminal == 1 && at != len(tv.Events)-1:
		ev := tv.Events[at+1]
		return fmt.Sprintf("transition %s→%s after the terminal event %s (%s)", ev.From, ev.To, tv.Events[at].To, eventChain(tv.Events))
	case terminal == 1 && tv.Events[at].To != tv.Task.State:
		return fmt.Sprintf("state %s, terminal event %s", tv.Task.State, tv.Events[at].To)
	case terminal == 0 && tv.Task.State.Terminal():
		return fmt.Sprintf("state %s with no terminal event", tv.Task.State)
	}
	return ""
}

// transitions are the lifecycle's edges (DESIGN.md), with whether the
// lease epoch moves on each: claims, cancels, timeouts and recoveries bump
// it; a finish, a retry and a release at shutdown do not.
var transitions = map[[2]dockettype.State]string{
	{dockettype.StateQueued, dockettype.StateRunning}:    "bump",
	{dockettype.StateQueued, dockettype.StateCancelled}:  "bump",
	{dockettype.StateQueued, dockettype.StateTimedOut}:   "bump",
	{dockettype.StateRunning, dockettype.StateSucceeded}: "same",
	{dockettype.StateRunning, dockettype.StateFailed}:    "either", // finish: same; lease_lost on the last attempt: bump
	{dockettype.StateRunning, dockettype.StateQueued}:    "either", // retry, release: same; recovery: bump
	{dockettype.StateRunning, dockettype.StateCancelled}: "bump",
	{dockettype.StateRunning, dockettype.StateTimedOut}:  "bump",
}

// lifecycleProblems checks a task's events against the lifecycle: the
// admission event first, each event starting where the last ended, allowed
// edges only, the lease epoch moving as each edge says, and the attempt
// counter equal to the claims not handed back at shutdown.
func lifecycleProblems(tv *TaskView) []string {
	evs := tv.Events
	if len(evs) == 0 {
		return []string{"no events"}
	}
	var out []string
	if first := evs[0]; first.From != "" || first.To != dockettype.StateQueued || first.Epoch != 0 {
		out = append(out, fmt.Sprintf("first event %q→%s epoch %d, want \"\"→queued epoch 0", first.From, first.To, first.Epoch))
	}
	claims, releases := 0, 0
	for i := 1; i < len(evs); i++ {
		prev, ev := evs[i-1], evs[i]
		if ev.ID <= prev.ID {
			out = append(out, fmt.Sprintf("event %d has ID %d after %d", i, ev.ID, prev.ID))
		}
		if ev.From != prev.To {
			out = append(out, fmt.Sprintf("event %d: %s→%s after one ending in %s", i, ev.From, ev.To, prev.To))
			continue
		}
		rule, ok := transitions[[2]dockettype.State{ev.From, ev.To}]
		if !ok {
			if !prev.To.Terminal() { // after a terminal event: reported as an overwrite
				out = append(out, fmt.Sprintf("event %d: %s→%s is not a transition of the lifecycle", i, ev.From, ev.To))
			}
			continue
		}
		d := ev.Epoch - prev.Epoch
		switch {
		case rule == "bump" && d != 1, rule == "same" && d != 0, rule == "either" && d != 0 && d != 1:
			out = append(out, fmt.Sprintf("event %d: %s→%s moves the epoch from %d to %d", i, ev.From, ev.To, prev.Epoch, ev.Epoch))
		}
		if ev.From == dockettype.StateQueued && ev.To == dockettype.StateRunning {
			claims++
		}
		if ev.From == dockettype.StateRunning && ev.To == dockettype.StateQueued && ev.Code == dockettype.CodeShutdown {
			releases++
		}
	}
	if want := claims - releases; tv.Task.Attempt != want {
		out = append(out, fmt.Sprintf("attempt %d, but %d claims and %d releases in its events", tv.Task.Attempt, claims, releases))
	}
	return out
}

// checkAdmission replays admissions and terminal events of the run's tasks
// in event-ID order and checks that the tasks in flight never exceed the
// pool's capacity or a tenant's limit. The order is the commit order where
// it matters: SQLite has one writer, and on PostgreSQL an admission takes
// its ID after it read the counts under the pool's and tenant's gate locks,
// so every release it counted has a smaller ID. Tasks outside the run are
// not counted, so the check can miss an excess but never invent one.
func checkAdmission(r *Result, db map[string]*TaskView, lim Limits) {
	type step struct {
		id     int64
		task   *dockettype.Task
		delta  int
		taskID string
	}
	var steps []step
	for id, tv := range db {
		for _, ev := range tv.Events {
			switch {
			case ev.From == "" && ev.To == dockettype.StateQueued:
				steps = append(steps, step{ev.ID, tv.Task, +1, id})
			case ev.To.Terminal():
				steps = append(steps, step{ev.ID, tv.Task, -1, id})
			}
		}
	}
	sort.Slice(steps, func(i, j int) bool { return steps[i].id < steps[j].id })
	inFlight := map[string]int{}
	for _, s := range steps {
		pool := "pool:" + string(s.task.Pool)
		inFlight[pool] += s.delta
		inFlight[s.task.Tenant] += s.delta
		if s.delta < 0 {
			continue
		}
		r.PeakInFlight[pool] = max(r.PeakInFlight[pool], inFlight[pool])
		r.PeakInFlight[s.task.Tenant] = max(r.PeakInFlight[s.task.Tenant], inFlight[s.task.Tenant])
		if c := lim.PoolCapacity; c > 0 && s.task.Pool == dockettype.PoolOnline && inFlight[pool] > c {
			r.flag(AnomalyAdmission, "admitting task %s made %d tasks in flight in pool %s, capacity %d", s.taskID, inFlight[pool], s.task.Pool, c)
		}
		if l := lim.Tenants[s.task.Tenant]; l > 0 && inFlight[s.task.Tenant] > l {
			r.flag(AnomalyAdmission, "admitting task %s made %d tasks of tenant %s in flight, limit %d", s.taskID, inFlight[s.task.Tenant], s.task.Tenant, l)
		}
	}
}

// checkExecutions matches the probe's executions with the claims in the
// events: every execution runs under a claim's lease, at most one per
// lease, and a task that succeeded carries the result of the execution
// under the lease its success event names.
func checkExecutions(r *Result, db map[string]*TaskView, execs []ExecRecord, nodesStayUp bool) {
	type lease struct {
		task  string
		epoch int64
	}
	started := map[lease]int{}
	finishedOK := map[string][]int64{} // task → epochs whose execution returned a result
	retried := map[string]int{}        // task → executions that failed retryably
	for _, e := range execs {
		l := lease{e.Task, e.Epoch}
		switch e.Event {
		case execStart:
			started[l]++
			r.Executions++
		case execEnd:
			switch e.Outcome {
			case "ok":
				finishedOK[e.Task] = append(finishedOK[e.Task], e.Epoch)
			case "retry":
				retried[e.Task]++
			}
		}
	}
	perTask := map[string]int{}
	for l, n := range started {
		perTask[l.task] += n
		tv, ok := db[l.task]
		if !ok {
			r.flag(AnomalyExecutions, "task %s was executed (epoch %d) and is not in the database", l.task, l.epoch)
			continue
		}
		if n > 1 {
			r.flag(AnomalyExecutions, "task %s: %d executions under the one lease of epoch %d", l.task, n, l.epoch)
		}
		claimed := false
		for _, ev := range tv.Events {
			if ev.From == dockettype.StateQueued && ev.To == dockettype.StateRunning && ev.Epoch == l.epoch {
				claimed = true
			}
		}
		if !claimed {
			r.flag(AnomalyExecutions, "task %s: an execution under epoch %d, which no claim made", l.task, l.epoch)
		}
	}
	recovered := 0
	for id, tv := range db {
		claims := 0
		var successEpoch int64 = -1
		for _, ev := range tv.Events {
			if ev.From == dockettype.StateQueued && ev.To == dockettype.StateRunning {
				claims++
			}
			if ev.Code == dockettype.CodeLeaseLost {
				recovered++
			}
			if ev.To == dockettype.StateSucceeded {
				successEpoch = ev.Epoch
			}
		}
		r.Claims += claims
		if perTask[id] > claims {
			r.flag(AnomalyExecutions, "task %s: %d executions, %d claims", id, perTask[id], claims)
		}
		if perTask[id] > 1+retried[id] {
			r.ReExecuted++
		}
		if tv.Task.State == dockettype.StateSucceeded {
			var res probeResult
			if err := json.Unmarshal(tv.Task.Result, &res); err != nil || res.Task != id {
				r.flag(AnomalyFence, "task %s succeeded with a result its probe did not write", id)
			} else if res.Epoch != successEpoch {
				r.flag(AnomalyFence, "task %s succeeded under epoch %d with the result of the execution under epoch %d", id, successEpoch, res.Epoch)
			} else if started[lease{id, res.Epoch}] == 0 && len(execs) > 0 {
				r.flag(AnomalyFence, "task %s carries the result of epoch %d, whose execution no log recorded", id, res.Epoch)
			}
		}
		for _, epoch := range finishedOK[id] {
			if !(tv.Task.State == dockettype.StateSucceeded && epoch == successEpoch) {
				r.DiscardedResults++
			}
		}
	}
	r.LeaseRecoveries = recovered
	if nodesStayUp && recovered > 0 {
		r.Findings = append(r.Findings, fmt.Sprintf(
			"%d leases recovered (lease_lost) although every node stayed up and connected: leases taken from live workers; %d finished results discarded, %d tasks run again",
			recovered, r.DiscardedResults, r.ReExecuted))
	}
}

// checkViews compares the store's answers with the HTTP API's for every
// terminal task (a task still moving may differ between the two reads).
func checkViews(r *Result, s Snapshot) {
	if s.API == nil {
		return
	}
	ids := make([]string, 0, len(s.Store))
	for id := range s.Store {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		st := s.Store[id]
		if !st.Task.State.Terminal() {
			continue
		}
		api, ok := s.API[id]
		if !ok {
			r.flag(AnomalyViews, "task %s: the store holds it, the API does not answer it", id)
			continue
		}
		if msg := viewDiff(st, api); msg != "" {
			r.flag(AnomalyViews, "task %s: %s", id, msg)
		}
	}
}

func viewDiff(a, b *TaskView) string {
	ta, tb := a.Task, b.Task
	switch {
	case ta.State != tb.State:
		return fmt.Sprintf("state %s in the store, %s over HTTP", ta.State, tb.State)
	case ta.Attempt != tb.Attempt:
		return fmt.Sprintf("attempt %d in the store, %d over HTTP", ta.Attempt, tb.Attempt)
	case ta.Tenant != tb.Tenant:
		return "tenants differ"
	case !jsonEqual(ta.Result, tb.Result):
		return "results differ"
	case len(a.Events) != len(b.Events):
		return fmt.Sprintf("%d events in the store, %d over HTTP", len(a.Events), len(b.Events))
	}
	for i := range a.Events {
		ea, eb := a.Events[i], b.Events[i]
		if ea.ID != eb.ID || ea.From != eb.From || ea.To != eb.To || ea.Epoch != eb.Epoch || ea.Code != eb.Code {
			return fmt.Sprintf("event %d differs", i)
		}
	}
	return ""
}

func jsonEqual(a, b json.RawMessage) bool {
	if len(a) == 0 || string(a) == "null" {
		return len(b) == 0 || string(b) == "null"
	}
	var ca, cb bytes.Buffer
	if json.Compact(&ca, a) != nil || json.Compact(&cb, b) != nil {
		return bytes.Equal(a, b)
	}
	return bytes.Equal(ca.Bytes(), cb.Bytes())
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

// logForbidden are what no server log line may carry (R8): the payload
// canary, and fragments of SQL statements and database or driver error
// messages, which the faults provoke by the hundred.
var logForbidden = []string{
	LogCanary,
	"SELECT ", "INSERT ", "UPDATE ", "DELETE ", " WHERE ",
	"sqlite", "SQLITE", "SQLSTATE", "pgx", "pgconn", "syntax error", "constraint",
	"no such table", "database is locked", "connection refused", "duplicate key",
	"connection reset", "broken pipe", "unexpected EOF",
}

// checkLogs flags every server log line that leaks.
func checkLogs(r *Result, logs map[string][]string) {
	nodes := make([]string, 0, len(logs))
	for n := range logs {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	for _, n := range nodes {
		for _, line := range logs[n] {
			for _, f := range logForbidden {
				if strings.Contains(line, f) {
					if len(line) > 300 {
						line = line[:300] + "…"
					}
					r.flag(AnomalyLogLeak, "node %s logged %q: %s", n, f, line)
					break
				}
			}
		}
	}
}

// checkReservations compares each tenant's in-flight count with its
// unfinished tasks: a terminal task whose reservation was not released (or
// released twice) shows as a difference, and would shrink (or grow) the
// tenant's limit for good.
func checkReservations(r *Result, db map[string]*TaskView, inFlight map[string]int) {
	unfinished := map[string]int{}
	for _, tv := range db {
		if !tv.Task.State.Terminal() {
			unfinished[tv.Task.Tenant]++
		}
	}
	tenants := make([]string, 0, len(inFlight))
	for t := range inFlight {
		tenants = append(tenants, t)
	}
	sort.Strings(tenants)
	for _, t := range tenants {
		if inFlight[t] != unfinished[t] {
			r.flag(AnomalyReservation, "tenant %s counts %d tasks in flight and has %d unfinished", t, inFlight[t], unfinished[t])
		}
	}
}
