package faultcheck

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/docket-dev/docket/dockettype"
)

// fixture builds a fabricated run: a history, a database and execution
// logs, consistent unless a test breaks them.
type fixture struct {
	t      *testing.T
	ops    []Op
	db     map[string]*TaskView
	execs  []ExecRecord
	nextEv int64
	now    time.Time
	limits Limits
}

func newFixture(t *testing.T) *fixture {
	return &fixture{t: t, db: map[string]*TaskView{}, now: time.Unix(1_700_000_000, 0),
		limits: Limits{PoolCapacity: 100, Tenants: map[string]int{"t1": 0}}}
}

func (f *fixture) op(op Op) Op {
	f.now = f.now.Add(time.Millisecond)
	op.Index = len(f.ops)
	op.Invoked, op.Complete = f.now, f.now.Add(500*time.Microsecond)
	if op.Phase == "" {
		op.Phase = PhaseLoad
	}
	f.ops = append(f.ops, op)
	return op
}

// ack records a submit of key answered with task id.
func (f *fixture) ack(key, id string) {
	f.op(Op{Kind: OpSubmit, Tenant: "t1", Key: key, TaskID: id, Outcome: OK, Status: http.StatusCreated, State: dockettype.StateQueued})
}

// succeeded puts a task in the database that was claimed once and
// succeeded, with its execution logged and its result from that
// execution.
func (f *fixture) succeeded(id string) *TaskView {
	tv := f.task(id, dockettype.StateSucceeded, 1,
		[3]any{"", dockettype.StateQueued, 0}, [3]any{dockettype.StateQueued, dockettype.StateRunning, 1},
		[3]any{dockettype.StateRunning, dockettype.StateSucceeded, 1})
	tv.Task.Result = result(id, 1)
	f.exec(id, 1, "ok")
	return tv
}

func result(id string, epoch int64) json.RawMessage {
	b, _ := json.Marshal(probeResult{Task: id, Epoch: epoch, Attempt: 1, PID: 42})
	return b
}

// task puts a task with the given events (from, to, epoch) in the database.
func (f *fixture) task(id string, state dockettype.State, attempt int, events ...[3]any) *TaskView {
	tv := &TaskView{Task: &dockettype.Task{ID: id, Tenant: "t1", Pool: dockettype.PoolOnline, State: state, Attempt: attempt}}
	for _, e := range events {
		f.nextEv++
		var from dockettype.State
		if s, ok := e[0].(dockettype.State); ok {
			from = s
		}
		tv.Events = append(tv.Events, dockettype.Event{ID: f.nextEv, TaskID: id, From: from, To: e[1].(dockettype.State), Epoch: int64(e[2].(int))})
	}
	f.db[id] = tv
	return tv
}

// exec logs an execution of task id under epoch, start and end, on
// process 42.
func (f *fixture) exec(id string, epoch int64, outcome string) {
	f.start(42, id, epoch)
	f.end(42, id, epoch, outcome)
}

// start logs the start of an execution on process pid, with the attempt a
// probe would be given: one more than the task's claims before epoch that
// were not handed back at shutdown (1 when the database has no such claim).
func (f *fixture) start(pid int, id string, epoch int64) {
	f.startAttempt(pid, id, epoch, f.attemptAt(id, epoch))
}

func (f *fixture) startAttempt(pid int, id string, epoch int64, attempt int) {
	f.execs = append(f.execs, ExecRecord{Event: execStart, Task: id, Epoch: epoch, Attempt: attempt, PID: pid})
}

func (f *fixture) end(pid int, id string, epoch int64, outcome string) {
	for _, e := range f.execs {
		if e.Event == execStart && e.Task == id && e.Epoch == epoch {
			f.execs = append(f.execs, ExecRecord{Event: execEnd, Task: id, Epoch: epoch, Attempt: e.Attempt, PID: pid, Outcome: outcome})
			return
		}
	}
	f.t.Fatalf("end of an execution of %s under epoch %d that did not start", id, epoch)
}

func (f *fixture) attemptAt(id string, epoch int64) int {
	tv, ok := f.db[id]
	if !ok {
		return 1
	}
	claims, releases := 0, 0
	for _, ev := range tv.Events {
		switch {
		case isClaim(ev):
			claims++
			if ev.Epoch == epoch {
				return claims - releases
			}
		case isRelease(ev):
			releases++
		case isRetry(ev):
			claims, releases = 0, 0
		}
	}
	return 1
}

// check runs the checker with the API answering like the store.
func (f *fixture) check() *Result {
	api := map[string]*TaskView{}
	for id, tv := range f.db {
		task := *tv.Task
		api[id] = &TaskView{Task: &task, Events: append([]dockettype.Event(nil), tv.Events...)}
	}
	return f.checkWith(api)
}

func (f *fixture) checkWith(api map[string]*TaskView) *Result {
	return Check(&CheckInput{Ops: f.ops, Snapshot: Snapshot{Store: f.db, API: api}, Execs: f.execs, Limits: f.limits})
}

// wantOnly asserts that r counts exactly want of each kind (0 for the
// others), and that every example mentions one of mentions.
func wantOnly(t *testing.T, r *Result, want map[string]int, mentions ...string) {
	t.Helper()
	for _, kind := range anomalyKinds {
		if got := r.Anomalies[kind]; got != want[kind] {
			t.Errorf("%s: %d anomalies, want %d; examples %q", kind, got, want[kind], r.Examples[kind])
		}
	}
	for kind, examples := range r.Examples {
		for _, e := range examples {
			found := false
			for _, m := range mentions {
				found = found || strings.Contains(e, m)
			}
			if !found {
				t.Errorf("%s example %q names none of %q", kind, e, mentions)
			}
		}
	}
}

func TestCheckCleanRun(t *testing.T) {
	f := newFixture(t)
	f.limits.Tenants["t1"] = 2
	for i := range 5 {
		id := fmt.Sprintf("task-%d", i)
		f.op(Op{Kind: OpSubmit, Tenant: "t1", Key: fmt.Sprint("k", i), Outcome: Indeterminate, Code: "no_answer"})
		f.ack(fmt.Sprint("k", i), id)
		f.succeeded(id)
		f.op(Op{Kind: OpRead, Tenant: "t1", TaskID: id, Outcome: OK, Status: http.StatusOK, State: dockettype.StateSucceeded})
		f.op(Op{Kind: OpSubmit, Phase: PhaseResolve, Tenant: "t1", Key: fmt.Sprint("k", i), TaskID: id, Outcome: OK, Status: http.StatusOK, Replayed: true, State: dockettype.StateSucceeded})
	}
	// A retried task: a retryable failure, a recovery after a crash, then
	// success.
	f.ack("k-retry", "task-r")
	tv := f.task("task-r", dockettype.StateSucceeded, 3,
		[3]any{"", dockettype.StateQueued, 0},
		[3]any{dockettype.StateQueued, dockettype.StateRunning, 1},
		[3]any{dockettype.StateRunning, dockettype.StateQueued, 1}, // retry
		[3]any{dockettype.StateQueued, dockettype.StateRunning, 2},
		[3]any{dockettype.StateRunning, dockettype.StateQueued, 3}, // recovery (lease_lost)
		[3]any{dockettype.StateQueued, dockettype.StateRunning, 4},
		[3]any{dockettype.StateRunning, dockettype.StateSucceeded, 4})
	tv.Events[4].Code = dockettype.CodeLeaseLost
	tv.Task.Result = result("task-r", 4)
	f.exec("task-r", 1, "retry")
	f.exec("task-r", 2, "ok") // its lease was lost before the result was written
	f.exec("task-r", 4, "ok")

	r := f.check()
	wantOnly(t, r, nil)
	if r.Acknowledged != 6 || r.Tasks != 6 || r.Executions != 8 || r.Claims != 8 {
		t.Errorf("acknowledged %d, tasks %d, executions %d, claims %d; want 6, 6, 8, 8", r.Acknowledged, r.Tasks, r.Executions, r.Claims)
	}
	if r.ReExecuted != 1 || r.DiscardedResults != 1 || r.LeaseRecoveries != 1 {
		t.Errorf("re-executed %d, discarded %d, recoveries %d; want 1, 1, 1", r.ReExecuted, r.DiscardedResults, r.LeaseRecoveries)
	}
	if r.PeakInFlight["t1"] != 1 {
		t.Errorf("peak in flight of t1 = %d, want 1 (the tasks ran one after another)", r.PeakInFlight["t1"])
	}
}

func TestCheckFindsLostTask(t *testing.T) {
	f := newFixture(t)
	f.ack("k1", "task-1")
	f.succeeded("task-1")
	f.ack("k2", "task-2") // acknowledged, then gone
	f.op(Op{Kind: OpRead, Tenant: "t1", TaskID: "task-2", Outcome: Failed, Status: http.StatusNotFound, Code: "not_found"})
	r := f.check()
	wantOnly(t, r, map[string]int{AnomalyLost: 2}, "task-2")
	if r.Lost != 2 {
		t.Errorf("Lost = %d, want 2 (missing from the database, and answered not_found)", r.Lost)
	}
}

func TestCheckFindsDuplicates(t *testing.T) {
	f := newFixture(t)
	// A key answered with two tasks: the replay after the load made a new
	// one instead of naming the first.
	f.ack("k1", "task-1")
	f.succeeded("task-1")
	f.op(Op{Kind: OpSubmit, Phase: PhaseResolve, Tenant: "t1", Key: "k1", TaskID: "task-1b", Outcome: OK, Status: http.StatusCreated, State: dockettype.StateQueued})
	f.succeeded("task-1b")
	// A task no answered submit explains: a key that committed twice.
	f.ack("k2", "task-2")
	f.succeeded("task-2")
	f.succeeded("task-2-twin")
	r := f.check()
	wantOnly(t, r, map[string]int{AnomalyDuplicated: 2}, "k1", "task-2-twin")
	if r.Duplicated != 2 {
		t.Errorf("Duplicated = %d, want 2", r.Duplicated)
	}
}

func TestCheckFindsDroppedAnswerDuplicate(t *testing.T) {
	f := newFixture(t)
	// The proxy dropped the answer naming task-1; the client's retry was
	// answered with another task.
	f.op(Op{Process: -1, Kind: OpFault, Fault: FaultDropResponse, Tenant: "t1", Key: "k1", TaskID: "task-1", Outcome: OK})
	f.succeeded("task-1")
	f.ack("k1", "task-1b")
	f.succeeded("task-1b")
	r := f.check()
	wantOnly(t, r, map[string]int{AnomalyDuplicated: 1}, "k1")
}

func TestCheckFindsOverwrittenTerminals(t *testing.T) {
	f := newFixture(t)
	// Two terminal events: a late result after a cancel.
	f.ack("k1", "task-1")
	f.task("task-1", dockettype.StateSucceeded, 1,
		[3]any{"", dockettype.StateQueued, 0}, [3]any{dockettype.StateQueued, dockettype.StateRunning, 1},
		[3]any{dockettype.StateRunning, dockettype.StateCancelled, 2},
		[3]any{dockettype.StateCancelled, dockettype.StateSucceeded, 2})
	// One terminal event, but a client was told cancelled and the task
	// ended succeeded.
	f.ack("k2", "task-2")
	f.succeeded("task-2")
	f.op(Op{Kind: OpCancel, Tenant: "t1", TaskID: "task-2", Outcome: OK, Status: http.StatusOK, State: dockettype.StateCancelled})
	// Shown succeeded, later shown running.
	f.ack("k3", "task-3")
	f.succeeded("task-3")
	f.op(Op{Kind: OpRead, Tenant: "t1", TaskID: "task-3", Outcome: OK, Status: http.StatusOK, State: dockettype.StateSucceeded})
	f.op(Op{Kind: OpRead, Tenant: "t1", TaskID: "task-3", Outcome: OK, Status: http.StatusOK, State: dockettype.StateRunning})
	r := f.check()
	wantOnly(t, r, map[string]int{AnomalyOverwritten: 3, AnomalyFence: 1}, "task-1", "task-2", "task-3")
	if r.OverwrittenTerminals != 3 {
		t.Errorf("OverwrittenTerminals = %d, want 3", r.OverwrittenTerminals)
	}
}

func TestCheckFindsStuckAndLifecycle(t *testing.T) {
	f := newFixture(t)
	f.ack("k1", "task-1")
	f.task("task-1", dockettype.StateRunning, 1,
		[3]any{"", dockettype.StateQueued, 0}, [3]any{dockettype.StateQueued, dockettype.StateRunning, 1})
	f.exec("task-1", 1, "")
	// queued → succeeded skips running; the claim does not move the epoch.
	f.ack("k2", "task-2")
	f.task("task-2", dockettype.StateSucceeded, 1,
		[3]any{"", dockettype.StateQueued, 0}, [3]any{dockettype.StateQueued, dockettype.StateRunning, 0},
		[3]any{dockettype.StateRunning, dockettype.StateQueued, 0},
		[3]any{dockettype.StateQueued, dockettype.StateSucceeded, 1})
	f.db["task-2"].Task.Result = result("task-2", 1)
	r := f.check()
	if r.StuckAfterDrain != 1 {
		t.Errorf("StuckAfterDrain = %d, want 1", r.StuckAfterDrain)
	}
	// task-2: a claim that does not move the epoch, and queued→succeeded;
	// its result names epoch 1, whose execution no log recorded.
	if r.Anomalies[AnomalyLifecycle] != 2 {
		t.Errorf("lifecycle anomalies = %d, want 2: %q", r.Anomalies[AnomalyLifecycle], r.Examples[AnomalyLifecycle])
	}
	if r.Anomalies[AnomalyFence] != 1 {
		t.Errorf("fence anomalies = %d, want 1: %q", r.Anomalies[AnomalyFence], r.Examples[AnomalyFence])
	}
}

func TestCheckFindsAdmissionOverLimit(t *testing.T) {
	f := newFixture(t)
	f.limits = Limits{PoolCapacity: 2, Tenants: map[string]int{"t1": 0}}
	// Three tasks admitted before any finished: 3 in flight, capacity 2.
	for i := range 3 {
		id := fmt.Sprint("task-", i)
		f.ack(fmt.Sprint("k", i), id)
		f.db[id] = &TaskView{Task: &dockettype.Task{ID: id, Tenant: "t1", Pool: dockettype.PoolOnline, State: dockettype.StateCancelled}}
	}
	for i := range 3 {
		id := fmt.Sprint("task-", i)
		f.nextEv++
		f.db[id].Events = append(f.db[id].Events, dockettype.Event{ID: f.nextEv, TaskID: id, To: dockettype.StateQueued})
	}
	for i := range 3 {
		id := fmt.Sprint("task-", i)
		f.nextEv++
		f.db[id].Events = append(f.db[id].Events, dockettype.Event{ID: f.nextEv, TaskID: id, From: dockettype.StateQueued, To: dockettype.StateCancelled, Epoch: 1})
	}
	r := f.check()
	wantOnly(t, r, map[string]int{AnomalyAdmission: 1}, "task-2")
	if r.PeakInFlight["pool:online"] != 3 {
		t.Errorf("peak = %d, want 3", r.PeakInFlight["pool:online"])
	}

	// The same with a tenant limit of 1 and the pool unbounded: two
	// admissions over it.
	f.limits = Limits{Tenants: map[string]int{"t1": 1}}
	wantOnly(t, f.check(), map[string]int{AnomalyAdmission: 2}, "task-1", "task-2")
}

func TestCheckFindsExecutionsOverAttempts(t *testing.T) {
	f := newFixture(t)
	f.ack("k1", "task-1")
	f.succeeded("task-1")
	f.exec("task-1", 1, "ok") // a second execution under the same lease
	f.ack("k2", "task-2")
	f.succeeded("task-2")
	f.exec("task-2", 7, "ok") // an execution under a lease no claim made
	r := f.check()
	// task-1: two under one lease, and 2 executions for 1 claim; task-2:
	// no claim for epoch 7, and 2 executions for 1 claim.
	wantOnly(t, r, map[string]int{AnomalyExecutions: 4}, "task-1", "task-2")
}

func TestCheckFindsBrokenFence(t *testing.T) {
	f := newFixture(t)
	// Recovered after its first claim; the result of that stale execution
	// was written under the second lease.
	f.ack("k1", "task-1")
	tv := f.task("task-1", dockettype.StateSucceeded, 2,
		[3]any{"", dockettype.StateQueued, 0}, [3]any{dockettype.StateQueued, dockettype.StateRunning, 1},
		[3]any{dockettype.StateRunning, dockettype.StateQueued, 2}, [3]any{dockettype.StateQueued, dockettype.StateRunning, 3},
		[3]any{dockettype.StateRunning, dockettype.StateSucceeded, 3})
	tv.Events[2].Code = dockettype.CodeLeaseLost
	tv.Task.Result = result("task-1", 1)
	f.exec("task-1", 1, "ok")
	f.exec("task-1", 3, "ok")
	wantOnly(t, f.check(), map[string]int{AnomalyFence: 1}, "task-1")
}

func TestCheckFindsViewsDisagreeAndRefusedReplay(t *testing.T) {
	f := newFixture(t)
	f.ack("k1", "task-1")
	f.succeeded("task-1")
	f.op(Op{Kind: OpSubmit, Tenant: "t1", Key: "k1", Outcome: Failed, Status: http.StatusConflict, Code: "idempotency_conflict"})
	api := map[string]*TaskView{}
	task := *f.db["task-1"].Task
	task.State = dockettype.StateFailed
	api["task-1"] = &TaskView{Task: &task, Events: f.db["task-1"].Events}
	wantOnly(t, f.checkWith(api), map[string]int{AnomalyViews: 1, AnomalyReplay: 1}, "task-1", "k1")
}

func TestCheckFindsLeasesTakenFromLiveWorkers(t *testing.T) {
	f := newFixture(t)
	f.ack("k1", "task-1")
	tv := f.task("task-1", dockettype.StateSucceeded, 2,
		[3]any{"", dockettype.StateQueued, 0}, [3]any{dockettype.StateQueued, dockettype.StateRunning, 1},
		[3]any{dockettype.StateRunning, dockettype.StateQueued, 2}, [3]any{dockettype.StateQueued, dockettype.StateRunning, 3},
		[3]any{dockettype.StateRunning, dockettype.StateSucceeded, 3})
	tv.Events[2].Code = dockettype.CodeLeaseLost
	tv.Task.Result = result("task-1", 3)
	f.exec("task-1", 1, "ok")
	f.exec("task-1", 3, "ok")
	r := Check(&CheckInput{Ops: f.ops, Snapshot: Snapshot{Store: f.db}, Execs: f.execs, Limits: f.limits, NodesStayUp: true})
	wantOnly(t, r, nil)
	if len(r.Findings) != 1 || !strings.Contains(r.Findings[0], "1 leases recovered") {
		t.Errorf("findings %q, want one about the lease taken from a live worker", r.Findings)
	}
}

func TestCheckCountsUnresolvedKeys(t *testing.T) {
	f := newFixture(t)
	// Never answered, during the load or after it: unknown, not an anomaly
	// while no task is left unexplained.
	f.op(Op{Kind: OpSubmit, Tenant: "t1", Key: "k1", Outcome: Indeterminate, Code: "no_answer"})
	f.op(Op{Kind: OpSubmit, Phase: PhaseResolve, Tenant: "t1", Key: "k1", Outcome: Indeterminate, Status: http.StatusServiceUnavailable, Code: "store_unavailable"})
	// Answered only 503 during the load, found committed by the replay.
	f.op(Op{Kind: OpSubmit, Tenant: "t1", Key: "k2", Outcome: Indeterminate, Status: http.StatusServiceUnavailable, Code: "store_unavailable"})
	f.op(Op{Kind: OpSubmit, Phase: PhaseResolve, Tenant: "t1", Key: "k2", TaskID: "task-2", Outcome: OK, Status: http.StatusOK, Replayed: true, State: dockettype.StateSucceeded})
	f.succeeded("task-2")
	r := f.check()
	wantOnly(t, r, nil)
	if r.Unresolved != 1 || r.Acknowledged != 1 || r.ResolvedCommitted != 1 || r.CommittedDespite503 != 1 {
		t.Errorf("unresolved %d, acknowledged %d, resolved committed %d, committed despite 503 %d; want 1 each",
			r.Unresolved, r.Acknowledged, r.ResolvedCommitted, r.CommittedDespite503)
	}
}

func TestCheckFindsLogLeaks(t *testing.T) {
	f := newFixture(t)
	f.ack("k1", "task-1")
	f.succeeded("task-1")
	r := Check(&CheckInput{Ops: f.ops, Snapshot: Snapshot{Store: f.db}, Execs: f.execs, Limits: f.limits,
		Logs: map[string][]string{"a": {
			`{"level":"INFO","msg":"task finished","task_id":"task-1","code":"ok"}`,
			`{"level":"ERROR","msg":"claim failed","err":"read tcp: connection reset by peer"}`,
			`{"level":"INFO","msg":"task","input":{"canary":"` + LogCanary + `"}}`,
		}}})
	wantOnly(t, r, map[string]int{AnomalyLogLeak: 2}, "connection reset", LogCanary)
}

func TestCheckFindsTaskStuckAtTheDrainBound(t *testing.T) {
	f := newFixture(t)
	f.ack("k1", "task-1")
	// Queued when the drain gave up; timed out by its deadline later.
	f.task("task-1", dockettype.StateTimedOut, 0,
		[3]any{"", dockettype.StateQueued, 0}, [3]any{dockettype.StateQueued, dockettype.StateTimedOut, 1})
	r := Check(&CheckInput{Ops: f.ops, Snapshot: Snapshot{Store: f.db}, Limits: f.limits,
		UnfinishedAtDrain: map[string]dockettype.State{"task-1": dockettype.StateQueued}, DrainTimeout: 90 * time.Second})
	wantOnly(t, r, map[string]int{AnomalyStuck: 1}, "task-1")
}

func TestCheckFindsReservationLeaks(t *testing.T) {
	f := newFixture(t)
	f.ack("k1", "task-1")
	f.succeeded("task-1")
	r := Check(&CheckInput{Ops: f.ops, Snapshot: Snapshot{Store: f.db}, Execs: f.execs, Limits: f.limits,
		TenantInFlight: map[string]int{"t1": 1}})
	wantOnly(t, r, map[string]int{AnomalyReservation: 1}, "t1")
	r = Check(&CheckInput{Ops: f.ops, Snapshot: Snapshot{Store: f.db}, Execs: f.execs, Limits: f.limits,
		TenantInFlight: map[string]int{"t1": 0}})
	wantOnly(t, r, nil)
}

// A retry is the only way out of a terminal state: one terminal event per
// stretch between retries is clean, two in a stretch are an overwrite.
func TestCheckCountsTerminalEventsBetweenRetries(t *testing.T) {
	f := newFixture(t)
	f.limits.Tenants["t1"] = 1
	f.ack("k1", "task-1")
	tv := f.task("task-1", dockettype.StateSucceeded, 1,
		[3]any{"", dockettype.StateQueued, 0},
		[3]any{dockettype.StateQueued, dockettype.StateRunning, 1},
		[3]any{dockettype.StateRunning, dockettype.StateFailed, 1},
		[3]any{dockettype.StateFailed, dockettype.StateQueued, 2}, // retried
		[3]any{dockettype.StateQueued, dockettype.StateRunning, 3},
		[3]any{dockettype.StateRunning, dockettype.StateSucceeded, 3})
	tv.Events[3].Code = dockettype.CodeRetried
	tv.Task.Result = result("task-1", 3)
	f.exec("task-1", 1, "fail")
	f.exec("task-1", 3, "ok")
	f.op(Op{Kind: OpRead, Tenant: "t1", TaskID: "task-1", Outcome: OK, Status: http.StatusOK, State: dockettype.StateFailed})
	f.op(Op{Kind: OpRead, Tenant: "t1", TaskID: "task-1", Outcome: OK, Status: http.StatusOK, State: dockettype.StateSucceeded})
	r := f.check()
	wantOnly(t, r, nil)
	if r.PeakInFlight["t1"] != 1 {
		t.Errorf("peak in flight of t1 = %d, want 1 (the retry took the unit the failure gave back)", r.PeakInFlight["t1"])
	}

	g := newFixture(t)
	g.ack("k2", "task-2")
	tv = g.task("task-2", dockettype.StateSucceeded, 1,
		[3]any{"", dockettype.StateQueued, 0},
		[3]any{dockettype.StateQueued, dockettype.StateRunning, 1},
		[3]any{dockettype.StateRunning, dockettype.StateFailed, 1},
		[3]any{dockettype.StateFailed, dockettype.StateQueued, 2}, // retried
		[3]any{dockettype.StateQueued, dockettype.StateCancelled, 3},
		[3]any{dockettype.StateCancelled, dockettype.StateSucceeded, 3})
	tv.Events[3].Code = dockettype.CodeRetried
	g.exec("task-2", 1, "fail")
	r = g.check()
	if r.Anomalies[AnomalyOverwritten] != 1 {
		t.Errorf("two terminal events after a retry: %d overwrites, want 1 (%q)", r.Anomalies[AnomalyOverwritten], r.Examples)
	}
}
