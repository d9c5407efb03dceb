package faultcheck

import (
	"testing"

	"github.com/docket-dev/docket/dockettype"
)

// term records in the history a stop of process pid with SIGTERM — one
// that exited by itself in time if clean — and marks pid's execution log
// where the checker would: the lines logged after the mark were written
// during the shutdown.
func (f *fixture) term(pid int, clean bool) {
	outcome := OK
	if !clean {
		outcome = Failed
	}
	f.op(Op{Process: -1, Kind: OpFault, Fault: FaultTerm + " a", PID: pid, Outcome: outcome})
	f.execs = append(f.execs, ExecRecord{Event: execTerm, PID: pid})
}

// handedBack puts in the database a task claimed under epoch 1, handed back
// at shutdown, claimed again under epoch 2 and succeeded with that
// execution's result: the attempt the shutdown cut short was not charged.
func (f *fixture) handedBack(id string) *TaskView {
	tv := f.task(id, dockettype.StateSucceeded, 1,
		[3]any{"", dockettype.StateQueued, 0}, [3]any{dockettype.StateQueued, dockettype.StateRunning, 1},
		[3]any{dockettype.StateRunning, dockettype.StateQueued, 1}, [3]any{dockettype.StateQueued, dockettype.StateRunning, 2},
		[3]any{dockettype.StateRunning, dockettype.StateSucceeded, 2})
	tv.Events[2].Code = dockettype.CodeShutdown
	tv.Task.Result = result(id, 2)
	return tv
}

// recovered puts in the database a task claimed under epoch 1 whose lease
// lapsed (recovered, lease_lost), claimed again under epoch 3 and succeeded
// with that execution's result.
func (f *fixture) recovered(id string) *TaskView {
	tv := f.task(id, dockettype.StateSucceeded, 2,
		[3]any{"", dockettype.StateQueued, 0}, [3]any{dockettype.StateQueued, dockettype.StateRunning, 1},
		[3]any{dockettype.StateRunning, dockettype.StateQueued, 2}, [3]any{dockettype.StateQueued, dockettype.StateRunning, 3},
		[3]any{dockettype.StateRunning, dockettype.StateSucceeded, 3})
	tv.Events[2].Code = dockettype.CodeLeaseLost
	tv.Task.Result = result(id, 3)
	return tv
}

func TestCheckFindsOutcomesLostByAGracefulStop(t *testing.T) {
	// Process 100 is stopped with SIGTERM while four tasks run on it; each
	// execution returns during the grace. Their second executions, where
	// there is one, run on process 200. A fifth execution on process 100
	// finished before the stop; its lease lapsed later (a recovery from a
	// live worker, say), which is no loss of the stop's.
	build := func(t *testing.T, clean bool) *Result {
		f := newFixture(t)
		for _, id := range []string{"kept", "retried", "lapsed", "replaced", "earlier"} {
			f.ack("k-"+id, id)
		}
		f.recovered("earlier")
		f.start(100, "earlier", 1)
		f.end(100, "earlier", 1, "ok")
		f.exec("earlier", 3, "ok")
		kept := f.task("kept", dockettype.StateSucceeded, 1,
			[3]any{"", dockettype.StateQueued, 0}, [3]any{dockettype.StateQueued, dockettype.StateRunning, 1},
			[3]any{dockettype.StateRunning, dockettype.StateSucceeded, 1})
		kept.Task.Result = result("kept", 1)
		f.handedBack("retried")  // the error came after the grace's cancel: handed back
		f.recovered("lapsed")    // the outcome was dropped, the lease left to lapse
		f.handedBack("replaced") // a result handed back as if cut short
		for _, id := range []string{"kept", "retried", "lapsed", "replaced"} {
			f.start(100, id, 1)
		}
		f.term(100, clean)
		f.end(100, "kept", 1, "ok")
		f.end(100, "retried", 1, "retry")
		f.end(100, "lapsed", 1, "ok")
		f.end(100, "replaced", 1, "ok")
		f.exec("retried", 2, "ok")
		f.exec("lapsed", 3, "ok")
		f.exec("replaced", 2, "ok")
		return f.check()
	}

	t.Run("graceful stop", func(t *testing.T) {
		r := build(t, true)
		wantOnly(t, r, map[string]int{AnomalyOutcomeLost: 2}, "task lapsed", "task replaced")
		if r.GracefulStops != 1 || r.FinishedInGrace != 4 || r.HandedBack != 2 {
			t.Errorf("graceful stops %d, finished in the grace %d, handed back %d; want 1, 4, 2", r.GracefulStops, r.FinishedInGrace, r.HandedBack)
		}
	})
	// A stop that had to be killed promises nothing of its grace: only a
	// success handed back is an outcome lost, whatever the stop.
	t.Run("stop killed after its bound", func(t *testing.T) {
		r := build(t, false)
		wantOnly(t, r, map[string]int{AnomalyOutcomeLost: 1}, "task replaced")
		if r.GracefulStops != 0 || r.FinishedInGrace != 0 {
			t.Errorf("graceful stops %d, finished in the grace %d; want 0, 0", r.GracefulStops, r.FinishedInGrace)
		}
	})
}

func TestCheckFindsAttemptsChargedByAShutdown(t *testing.T) {
	f := newFixture(t)
	for _, id := range []string{"uncharged", "renumbered", "lapsed", "lapsed-silent", "crashed"} {
		f.ack("k-"+id, id)
	}
	// Handed back, claimed again: attempt 1 again.
	f.handedBack("uncharged")
	// Handed back, but the next claim ran attempt 2.
	f.handedBack("renumbered")
	// Cut short by the grace's cancel, then left to lapse: recovery charged
	// the attempt. The second one logged no end line at all.
	f.recovered("lapsed")
	f.recovered("lapsed-silent")
	// Lapsed too, but on a process killed -9: no stop promised a hand-back.
	f.recovered("crashed")
	for _, id := range []string{"uncharged", "renumbered", "lapsed", "lapsed-silent"} {
		f.start(100, id, 1)
	}
	f.start(300, "crashed", 1)
	f.term(100, true)
	f.end(100, "uncharged", 1, "stopped")
	f.end(100, "renumbered", 1, "stopped")
	f.end(100, "lapsed", 1, "stopped")
	f.start(200, "uncharged", 2)
	f.end(200, "uncharged", 2, "ok")
	f.startAttempt(200, "renumbered", 2, 2)
	f.end(200, "renumbered", 2, "ok")
	for _, id := range []string{"lapsed", "lapsed-silent", "crashed"} {
		f.start(200, id, 3)
		f.end(200, id, 3, "ok")
	}
	r := f.check()
	wantOnly(t, r, map[string]int{AnomalyCharged: 3}, "task renumbered", "task lapsed:", "task lapsed-silent:")
	if r.HandedBack != 2 || r.FinishedInGrace != 0 {
		t.Errorf("handed back %d, finished in the grace %d; want 2, 0", r.HandedBack, r.FinishedInGrace)
	}
}

func TestCheckFindsClaimsLostByAShutdown(t *testing.T) {
	// A claim under epoch 1 committed as a server was stopping, which never
	// saw it: nothing ran under it, its lease lapsed, and the execution
	// under epoch 3 runs attempt 2.
	build := func(t *testing.T, faults ...string) *fixture {
		f := newFixture(t)
		f.ack("k-unseen", "unseen")
		f.recovered("unseen")
		f.ack("k-ran", "ran")
		f.succeeded("ran")
		for _, fault := range faults {
			if fault == FaultTerm {
				f.term(100, true)
				continue
			}
			f.op(Op{Process: -1, Kind: OpFault, Fault: fault + " a", Outcome: OK})
		}
		f.exec("unseen", 3, "ok")
		return f
	}
	wantOnly(t, build(t, FaultTerm, FaultStart).check(), map[string]int{AnomalyClaimLost: 1}, "task unseen")
	// A server killed, frozen or cut off explains such a claim; and without
	// a graceful stop the check has nothing to hold to.
	for _, faults := range [][]string{{FaultTerm, FaultKill}, {FaultTerm, FaultPause}, {FaultTerm, FaultStall}, {FaultStart}, nil} {
		wantOnly(t, build(t, faults...).check(), nil)
	}
	// Without execution logs every claim would look silent.
	f := build(t, FaultTerm)
	f.execs = nil
	wantOnly(t, f.check(), nil)
}

func TestCheckFindsHandedBackTaskNotRunAgain(t *testing.T) {
	f := newFixture(t)
	for _, id := range []string{"rerun", "cancelled", "left", "expired"} {
		f.ack("k-"+id, id)
	}
	f.handedBack("rerun")
	f.exec("rerun", 1, "stopped")
	f.exec("rerun", 2, "ok")
	// Cancelled by a client while it waited: it needs no second run.
	tv := f.task("cancelled", dockettype.StateCancelled, 0,
		[3]any{"", dockettype.StateQueued, 0}, [3]any{dockettype.StateQueued, dockettype.StateRunning, 1},
		[3]any{dockettype.StateRunning, dockettype.StateQueued, 1}, [3]any{dockettype.StateQueued, dockettype.StateCancelled, 2})
	tv.Events[2].Code = dockettype.CodeShutdown
	f.exec("cancelled", 1, "stopped")
	// Never claimed again: still queued after the drain.
	tv = f.task("left", dockettype.StateQueued, 0,
		[3]any{"", dockettype.StateQueued, 0}, [3]any{dockettype.StateQueued, dockettype.StateRunning, 1},
		[3]any{dockettype.StateRunning, dockettype.StateQueued, 1})
	tv.Events[2].Code = dockettype.CodeShutdown
	f.exec("left", 1, "stopped")
	// Never claimed again before its deadline.
	tv = f.task("expired", dockettype.StateTimedOut, 0,
		[3]any{"", dockettype.StateQueued, 0}, [3]any{dockettype.StateQueued, dockettype.StateRunning, 1},
		[3]any{dockettype.StateRunning, dockettype.StateQueued, 1}, [3]any{dockettype.StateQueued, dockettype.StateTimedOut, 2})
	tv.Events[2].Code = dockettype.CodeShutdown
	f.exec("expired", 1, "stopped")

	r := f.check()
	// The task left queued is stuck too.
	wantOnly(t, r, map[string]int{AnomalyNotRerun: 2, AnomalyStuck: 1}, "task left", "task expired")
	if r.HandedBack != 4 {
		t.Errorf("handed back %d, want 4", r.HandedBack)
	}
}
