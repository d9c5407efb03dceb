package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/logtest"
	"github.com/docket-dev/docket/internal/store/postgres/pgtest"
)

// fleet is a remote worker of tenant acme's worker key.
var fleet = RemoteWorker{KeyID: "key_fleet", Tenant: "acme", ID: "host-1", SDK: "test/1", Slots: 4}

func (h *harness) claimRemote(w RemoteWorker, max int, wait time.Duration, workflows ...string) []RemoteTask {
	h.t.Helper()
	res, err := h.svc.ClaimRemote(context.Background(), &RemoteClaimRequest{Worker: w, Workflows: workflows, Max: max, Wait: wait})
	if err != nil {
		h.t.Fatalf("ClaimRemote: %v", err)
	}
	return res.Tasks
}

func wantStatuses(t *testing.T, what string, got []LeaseStatus, want ...LeaseStatus) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s: statuses %v, want %v", what, got, want)
	}
}

// A remote workflow's task is claimed by a remote worker only (the node's
// pools never run it), finished under its lease, and every write with a
// token that is not the worker's own is refused.
func TestRemoteClaimAndFencedFinish(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.rt.registerRemote("images.resize", dockettype.PoolOnline)
	h.start()
	task := h.submit(alice, "r1", "images.resize", `{"w":1}`)
	if _, err := h.svc.ClaimRemote(context.Background(), &RemoteClaimRequest{Worker: fleet, Workflows: []string{"test.echo"}}); dockettype.CodeOf(err) != dockettype.CodeUnknownWorkflow {
		t.Fatalf("claiming a built-in workflow: %v, want unknown_workflow", err)
	}
	got := h.claimRemote(fleet, 10, 0, "images.resize")
	if len(got) != 1 || got[0].Task.ID != task.ID || string(got[0].Input) != `{"w":1}` || got[0].Task.Attempt != 1 {
		t.Fatalf("claimed %+v, want the task as attempt 1 with its input", got)
	}
	lease := got[0].Lease
	other := fleet
	other.KeyID = "key_other"
	st, err := h.svc.HeartbeatRemote(context.Background(), &fleet, []string{lease, lease + "x", "dkl1.forged"})
	if err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, "heartbeat", st, LeaseOK, LeaseLost, LeaseLost)
	st, _ = h.svc.FinishRemote(context.Background(), &other, []RemoteOutcome{{Lease: lease, Succeeded: true, Result: json.RawMessage(`1`)}})
	wantStatuses(t, "finish with another key", st, LeaseLost)
	if got := h.get(alice, task.ID); got.State != dockettype.StateRunning {
		t.Fatalf("after a foreign finish the task is %s, want running", got.State)
	}
	if n := metric(h.svc.metrics.FencingRejections, "forged_lease"); n != 3 {
		t.Errorf("forged leases counted %v, want 3", n)
	}
	ok := []RemoteOutcome{{Lease: lease, Succeeded: true, Result: json.RawMessage(`{"url":"x"}`)}}
	for range 2 { // the second is a retry whose answer was lost: ok again
		st, err = h.svc.FinishRemote(context.Background(), &fleet, ok)
		if err != nil {
			t.Fatal(err)
		}
		wantStatuses(t, "finish", st, LeaseOK)
	}
	st, _ = h.svc.FinishRemote(context.Background(), &fleet, []RemoteOutcome{{Lease: lease, Failure: RemoteFailure{Code: "nope"}}})
	wantStatuses(t, "another outcome for the same lease", st, LeaseConflict)
	got2 := h.get(alice, task.ID)
	if got2.State != dockettype.StateSucceeded || string(got2.Result) != `{"url":"x"}` {
		t.Fatalf("task %s %s, want succeeded with the worker's result", got2.State, got2.Result)
	}
	assertHistoryValid(t, h, alice, task.ID)
}

// A retryable remote failure with attempts left is queued again with the
// in-process backoff; the next claim is attempt 2. A release hands the
// lease back: queued at once with a shutdown event, attempt not charged.
func TestRemoteRetryAndRelease(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.rt.registerRemote("jobs.flaky", dockettype.PoolOnline)
	h.start()
	task := h.submit(alice, "f1", "jobs.flaky", `1`)
	lease := h.claimRemote(fleet, 1, 0, "jobs.flaky")[0].Lease
	st, _ := h.svc.FinishRemote(context.Background(), &fleet, []RemoteOutcome{{Lease: lease,
		Failure: RemoteFailure{Code: "upstream_down", Message: "try later\x00", Retryable: true}}})
	wantStatuses(t, "retryable failure", st, LeaseOK)
	got := h.get(alice, task.ID)
	if got.State != dockettype.StateQueued || got.Error == nil || got.Error.Code != "upstream_down" || got.Error.Message != "try later" {
		t.Fatalf("after a retryable failure: %s %+v, want queued with the code and the cleaned message", got.State, got.Error)
	}
	if claimed := h.claimRemote(fleet, 1, 0, "jobs.flaky"); len(claimed) != 0 {
		t.Fatalf("claimed %d tasks during the backoff", len(claimed))
	}
	h.clock.Advance(2 * time.Second) // past the first backoff (1 s ± 20%)
	again := h.claimRemote(fleet, 1, 0, "jobs.flaky")
	if len(again) != 1 || again[0].Task.Attempt != 2 {
		t.Fatalf("after the backoff claimed %+v, want attempt 2", again)
	}
	st, _ = h.svc.ReleaseRemote(context.Background(), &fleet, []string{again[0].Lease})
	wantStatuses(t, "release", st, LeaseOK)
	got = h.get(alice, task.ID)
	if got.State != dockettype.StateQueued || got.Attempt != 1 {
		t.Fatalf("after the release: %s attempt %d, want queued with attempt 2 not charged", got.State, got.Attempt)
	}
	events, err := h.svc.Events(context.Background(), alice, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if last := events[len(events)-1]; last.From != dockettype.StateRunning || last.To != dockettype.StateQueued || last.Code != dockettype.CodeShutdown {
		t.Errorf("last event %+v, want running → queued with code shutdown", last)
	}
	// A final failure, on the last attempt.
	third := h.claimRemote(fleet, 1, 0, "jobs.flaky")
	if len(third) != 1 || third[0].Task.Attempt != 2 {
		t.Fatalf("after the release claimed %+v, want attempt 2 again", third)
	}
	h.svc.FinishRemote(context.Background(), &fleet, []RemoteOutcome{{Lease: third[0].Lease, Failure: RemoteFailure{Code: "BAD CODE", Retryable: false}}})
	got = h.get(alice, task.ID)
	if got.State != dockettype.StateFailed || got.Error.Code != dockettype.CodeWorkflowError {
		t.Errorf("final failure with a malformed code: %s %+v, want failed workflow_error", got.State, got.Error)
	}
	assertHistoryValid(t, h, alice, task.ID)
}

// Heartbeats tell a remote worker why to stop: the task was cancelled,
// timed out, or its lease was recovered.
func TestRemoteHeartbeatSaysWhy(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.rt.registerRemote("jobs.long", dockettype.PoolOnline)
	tk := h.watchTicks()
	h.start()
	cancelled := h.submit(alice, "c", "jobs.long", `1`)
	res, err := h.svc.Submit(context.Background(), alice, &SubmitRequest{IdempotencyKey: "t", Workflow: "jobs.long", TimeoutMS: 5000})
	if err != nil {
		t.Fatal(err)
	}
	timed := res.Task
	claimed := h.claimRemote(fleet, 2, 0, "jobs.long")
	leases := map[string]string{}
	for _, c := range claimed {
		leases[c.Task.ID] = c.Lease
	}
	if _, err := h.svc.Cancel(context.Background(), alice, cancelled.ID); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(6 * time.Second)
	await(t, "a deadline tick", tk.deadline)
	waitTerminal(t, h.svc, alice, timed.ID)
	st, err := h.svc.HeartbeatRemote(context.Background(), &fleet, []string{leases[cancelled.ID], leases[timed.ID]})
	if err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, "heartbeat", st, LeaseCancelled, LeaseTimedOut)
}

// A worker key of one tenant claims only its tenant's tasks; a key for all
// tenants claims every tenant's.
func TestRemoteTenantScope(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.rt.registerRemote("jobs.scoped", dockettype.PoolOnline)
	h.start()
	bob := principal("globex", "bob")
	h.submit(alice, "a", "jobs.scoped", `1`)
	theirs := h.submit(bob, "b", "jobs.scoped", `1`)
	globex := RemoteWorker{KeyID: "key_g", Tenant: "globex", ID: "g"}
	got := h.claimRemote(globex, 10, 0, "jobs.scoped")
	if len(got) != 1 || got[0].Task.ID != theirs.ID {
		t.Fatalf("globex's worker claimed %+v, want only globex's task", got)
	}
	ops := RemoteWorker{KeyID: "key_ops", Tenant: "ops", AllTenants: true, ID: "ops"}
	if got := h.claimRemote(ops, 10, 0, "jobs.scoped"); len(got) != 1 || got[0].Task.Tenant != "acme" {
		t.Fatalf("the all-tenants worker claimed %+v, want acme's task", got)
	}
}

// An idle worker's long poll answers as soon as a task is submitted on
// this node, without waiting for its poll interval.
func TestRemoteLongPollWokenBySubmit(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.rt.registerRemote("jobs.wake", dockettype.PoolOnline)
	h.start()
	done := make(chan []RemoteTask, 1)
	go func() {
		res, err := h.svc.ClaimRemote(context.Background(), &RemoteClaimRequest{Worker: fleet, Workflows: []string{"jobs.wake"},
			Max: 1, Wait: time.Minute})
		if err != nil {
			t.Error(err)
		}
		done <- res.Tasks
	}()
	task := h.submit(alice, "w", "jobs.wake", `1`)
	// The fake clock never moves: only the submit's wake-up can answer.
	got := await(t, "the long poll's answer", done)
	if len(got) != 1 || got[0].Task.ID != task.ID {
		t.Fatalf("the woken claim returned %+v, want the submitted task", got)
	}
}

// The worker API answers 503 (retry) on a node that is not running.
func TestRemoteStoppedNode(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.rt.registerRemote("jobs.x", dockettype.PoolOnline)
	_, err := h.svc.ClaimRemote(context.Background(), &RemoteClaimRequest{Worker: fleet, Workflows: []string{"jobs.x"}})
	var de *dockettype.Error
	if !errors.As(err, &de) || de.Code != dockettype.CodeStoreUnavailable || de.RetryAfter == 0 {
		t.Fatalf("claim on a stopped node: %v, want store_unavailable with Retry-After", err)
	}
}

// On PostgreSQL an idle remote worker long-polling node B is woken by a
// submission on node A (the store's notification), not by a poll: the
// fake clock never moves and B's poll interval is an hour.
func TestRemoteLongPollWokenByAnotherNode(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	schema := pgtest.Schema(t, url)
	clock := clockwork.NewFakeClockAt(baseTime)
	rt := newTestRuntime()
	rt.registerRemote("jobs.far", dockettype.PoolOnline)
	node := func(name string) *harness {
		logger, _ := logtest.New(t)
		st := pgtest.Open(t, url, schema)
		svc := newTestService(t, st, rt, Config{NodeID: name, Clock: clock, Logger: logger, PollInterval: time.Hour,
			ShutdownGrace: time.Millisecond, noJitter: true})
		return (&harness{t: t, svc: svc, clock: clock}).start()
	}
	a, b := node("node-a"), node("node-b")
	done := make(chan []RemoteTask, 1)
	go func() {
		res, err := b.svc.ClaimRemote(context.Background(), &RemoteClaimRequest{Worker: fleet, Workflows: []string{"jobs.far"},
			Max: 1, Wait: time.Minute})
		if err != nil {
			t.Error(err)
		}
		done <- res.Tasks
	}()
	// B's listener may connect after the submit's notification: submit
	// until the poll answers (each submit is a new task, and a claim that
	// starts after one found it at once).
	var submitted []string
	for i := 0; ; i++ {
		submitted = append(submitted, a.submit(alice, fmt.Sprint("far-", i), "jobs.far", `1`).ID)
		select {
		case got := <-done:
			if len(got) != 1 || !slices.Contains(submitted, got[0].Task.ID) {
				t.Fatalf("node B's claim returned %+v, want one of the tasks submitted on node A", got)
			}
			return
		case <-time.After(200 * time.Millisecond):
			if i == 50 {
				t.Fatal("node B's long poll was not woken by node A's submissions")
			}
		}
	}
}
