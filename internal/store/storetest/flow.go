package storetest

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// Flow control: pauses, concurrency keys and rate limits (see
// docs/flow-control.md).
func (su suite) testFlow(t *testing.T) {
	su.run(t, "PauseHoldsStartsResumeStartsInOrder", func(t *testing.T, s store.Store) {
		a := admitN(t, s, at(0), tenantA, 3, nil)
		b := admitN(t, s, at(10*ms), tenantB, 2, nil)
		setPaused(t, s, store.FlowTarget{Scope: store.ScopeTenant, Key: tenantA}, true)
		if w := getTask(t, s, tenantA, a[0].ID).WaitingOn; string(w) != store.WaitingOnPaused {
			t.Errorf("a paused tenant's task waits on %v, want paused", w)
		}
		got := claim(t, s, at(time.Second), dockettype.PoolOnline, 10)
		if want := []string{b[0].ID, b[1].ID}; !sameSet(claimedIDs(got), want) {
			t.Fatalf("claim with tenant %s paused = %v, want only the other tenant's %v", tenantA, claimedIDs(got), want)
		}
		// A pool pause holds everything; the submissions are still admitted.
		setPaused(t, s, store.FlowTarget{Scope: store.ScopePool, Key: string(dockettype.PoolOnline)}, true)
		c := admitN(t, s, at(2*time.Second), tenantB, 1, nil)
		if got := claim(t, s, at(3*time.Second), dockettype.PoolOnline, 10); len(got) != 0 {
			t.Fatalf("claim of a paused pool = %v, want none", claimedIDs(got))
		}
		paused := setPaused(t, s, store.FlowTarget{Scope: store.ScopePool, Key: string(dockettype.PoolOnline)}, false)
		if want := []store.Pause{{FlowTarget: store.FlowTarget{Scope: store.ScopeTenant, Key: tenantA}}}; !slices.Equal(paused, want) {
			t.Errorf("paused after the pool's resume = %v, want %v", paused, want)
		}
		if got := claim(t, s, at(4*time.Second), dockettype.PoolOnline, 10); !sameSet(claimedIDs(got), []string{c[0].ID}) {
			t.Fatalf("claim after the pool's resume = %v, want %v", claimedIDs(got), c[0].ID)
		}
		setPaused(t, s, store.FlowTarget{Scope: store.ScopeTenant, Key: tenantA}, false)
		for i, task := range a {
			got := claim(t, s, at(5*time.Second+time.Duration(i)*ms), dockettype.PoolOnline, 1)
			if len(got) != 1 || got[0].Task.ID != task.ID {
				t.Fatalf("claim %d after the tenant's resume = %v, want %s (oldest first)", i, claimedIDs(got), task.ID)
			}
		}
	})

	su.run(t, "PauseThatRefusesSubmissions", func(t *testing.T, s store.Store) {
		failed := failedTask(t, s, at(0), func() *store.AdmitItem { it := newItem(tenantA); it.Workflow = "demo.sleep"; return it }())
		wf := store.FlowTarget{Scope: store.ScopeWorkflow, Key: "demo.sleep"}
		if _, err := s.SetPaused(t.Context(), &store.SetPausedParams{Now: at(0), Target: wf, RefuseSubmissions: true}); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("refusing submissions without a pause: %v, want ErrInvalid", err)
		}
		got := pause(t, s, &store.SetPausedParams{Now: at(0), Target: wf, Paused: true, RefuseSubmissions: true})
		if want := []store.Pause{{FlowTarget: wf, RefuseSubmissions: true}}; !slices.Equal(got, want) {
			t.Errorf("paused = %v, want %v", got, want)
		}
		if r := getFlowRule(t, s, wf); !r.Paused || !r.RefuseSubmissions {
			t.Errorf("rule = %+v, want paused and refusing submissions", r)
		}

		// In one batch: the paused workflow's item is refused, nothing is
		// written for it; the others are admitted.
		sleep := newItem(tenantA)
		sleep.Workflow = "demo.sleep"
		echo := newItem(tenantA)
		res := admit(t, s, at(time.Second), sleep, echo)
		if res[0].Outcome != store.SubmissionsPaused || res[0].Task != nil || res[1].Outcome != store.Admitted {
			t.Fatalf("admit under a refusing pause: %v, %v, want submissions_paused then admitted", res[0].Outcome, res[1].Outcome)
		}
		if _, err := s.GetTask(t.Context(), &store.GetTaskParams{Tenant: tenantA, TaskID: sleep.TaskID}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("GetTask of the refused item: %v, want ErrNotFound", err)
		}
		wantUsage(t, s, dockettype.PoolOnline, 1, tenantA, 1)

		// A retry is not a submission: it is let through and waits for the
		// resume like the paused workflow's other tasks.
		if r := retryTasks(t, s, at(time.Second), retryItem(tenantA, failed.Task.ID))[0]; r.Outcome != store.Retried {
			t.Errorf("retry under a refusing pause: %v, want retried", r.Outcome)
		}
		if w := getTask(t, s, tenantA, failed.Task.ID).WaitingOn; string(w) != store.WaitingOnPaused {
			t.Errorf("the retried task waits on %v, want paused", w)
		}

		// A tenant's and a pool's refusing pauses refuse theirs alone.
		pause(t, s, &store.SetPausedParams{Now: at(0), Target: store.FlowTarget{Scope: store.ScopeTenant, Key: tenantB},
			Paused: true, RefuseSubmissions: true})
		offline := newItem(tenantA)
		offline.Pool = dockettype.PoolOffline
		res = admit(t, s, at(2*time.Second), newItem(tenantB), offline)
		if res[0].Outcome != store.SubmissionsPaused || res[1].Outcome != store.Admitted {
			t.Errorf("tenant B refusing: %v, %v, want submissions_paused then admitted", res[0].Outcome, res[1].Outcome)
		}
		pause(t, s, &store.SetPausedParams{Now: at(0), Target: store.FlowTarget{Scope: store.ScopePool, Key: string(dockettype.PoolOffline)},
			Paused: true, RefuseSubmissions: true})
		if r := admit(t, s, at(2*time.Second), retry(offline))[0]; r.Outcome != store.Replayed {
			t.Errorf("replay of a task admitted before the pause: %v, want replayed (a binding answers first)", r.Outcome)
		}
		if r := admit(t, s, at(2*time.Second), func() *store.AdmitItem { it := newItem(tenantA); it.Pool = dockettype.PoolOffline; return it }())[0]; r.Outcome != store.SubmissionsPaused {
			t.Errorf("offline pool refusing: %v, want submissions_paused", r.Outcome)
		}

		// Paused again without refusing: admitted, waiting. Resumed: the
		// refused request can be sent again and is a new task.
		pause(t, s, &store.SetPausedParams{Now: at(0), Target: wf, Paused: true})
		if r := admit(t, s, at(3*time.Second), newItem(tenantA), func() *store.AdmitItem { it := newItem(tenantA); it.Workflow = "demo.sleep"; return it }())[1]; r.Outcome != store.Admitted {
			t.Errorf("a pause that admits: %v, want admitted", r.Outcome)
		}
		for _, p := range setPaused(t, s, wf, false) {
			if p.FlowTarget == wf {
				t.Errorf("resumed workflow still paused: %+v", p)
			}
		}
		if r := getFlowRule(t, s, wf); r.Paused || r.RefuseSubmissions {
			t.Errorf("rule after resume = %+v, want neither paused nor refusing", r)
		}
		if r := admit(t, s, at(4*time.Second), retry(sleep))[0]; r.Outcome != store.Admitted {
			t.Errorf("the refused request after the resume: %v, want admitted", r.Outcome)
		}
	})

	su.run(t, "PausedWorkflowDoesNotHoldUpItsTenant", func(t *testing.T, s store.Store) {
		slow := admitN(t, s, at(0), tenantA, 5, func(it *store.AdmitItem) { it.Workflow = "demo.sleep" })
		echo := admitN(t, s, at(10*ms), tenantA, 2, nil)
		setPaused(t, s, store.FlowTarget{Scope: store.ScopeWorkflow, Key: "demo.sleep"}, true)
		var out store.ClaimOutcome
		got, err := s.Claim(t.Context(), &store.ClaimParams{Now: at(time.Second), Queue: store.PoolQueue(dockettype.PoolOnline),
			Owner: "node-1", Limit: 1, LeaseTTL: ttl, Outcome: &out})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].Task.ID != echo[0].ID {
			t.Fatalf("claim of 1 behind 5 tasks of a paused workflow = %v, want %s", claimedIDs(got), echo[0].ID)
		}
		if w := getTask(t, s, tenantA, slow[0].ID).WaitingOn; string(w) != store.WaitingOnPaused {
			t.Errorf("a paused workflow's task waits on %v, want paused", w)
		}
		counts, err := s.FlowWaiting(t.Context(), at(time.Second))
		if err != nil || counts[store.WaitingOnPaused] != 5 {
			t.Errorf("FlowWaiting = %v, %v; want 5 paused", counts, err)
		}
	})

	su.run(t, "ConcurrencyKeyAdmitsOneRunsOneOtherKeysGoOn", func(t *testing.T, s store.Store) {
		keyed := func(key string) func(*store.AdmitItem) {
			return func(it *store.AdmitItem) { it.ConcurrencyKey = key }
		}
		k1 := admitN(t, s, at(0), tenantA, 3, keyed("customer-1"))
		k2 := admitN(t, s, at(10*ms), tenantA, 1, keyed("customer-2"))
		other := admitN(t, s, at(20*ms), tenantB, 1, keyed("customer-1")) // another tenant's key of that name
		if w := k1[1].WaitingOn; string(w) != store.WaitingOnConcurrencyKey {
			t.Errorf("the second task of a key is admitted waiting on %v, want concurrency_key", w)
		}
		got := claim(t, s, at(time.Second), dockettype.PoolOnline, 10)
		if want := []string{k1[0].ID, k2[0].ID, other[0].ID}; !sameSet(claimedIDs(got), want) {
			t.Fatalf("claim = %v, want one task per key %v", claimedIDs(got), want)
		}
		if w := getTask(t, s, tenantA, k1[1].ID).WaitingOn; string(w) != store.WaitingOnConcurrencyKey {
			t.Errorf("the key's second task waits on %v, want concurrency_key", w)
		}
		if counts, err := s.FlowWaiting(t.Context(), at(time.Second)); err != nil || counts[store.WaitingOnConcurrencyKey] != 2 {
			t.Errorf("FlowWaiting = %v, %v; want 2 waiting on their key", counts, err)
		}
		var first *store.ClaimedTask
		for _, c := range got {
			if c.Task.ID == k1[0].ID {
				first = c
			}
		}
		// A retry keeps the key's slot: nothing else of the key starts.
		finishOne(t, s, at(2*time.Second), retryAt(first.Lease(), at(3*time.Second)), true)
		if got := claim(t, s, at(2*time.Second+ms), dockettype.PoolOnline, 10); len(got) != 0 {
			t.Fatalf("claim while the key's task waits for its retry = %v, want none", claimedIDs(got))
		}
		again := claim(t, s, at(3*time.Second), dockettype.PoolOnline, 10)
		if len(again) != 1 || again[0].Task.ID != k1[0].ID {
			t.Fatalf("claim after the retry's backoff = %v, want %s", claimedIDs(again), k1[0].ID)
		}
		// Its end frees the slot, exactly once: the next task of the key.
		finishOne(t, s, at(4*time.Second), succeed(again[0].Lease()), true)
		next := claim(t, s, at(4*time.Second+ms), dockettype.PoolOnline, 10)
		if len(next) != 1 || next[0].Task.ID != k1[1].ID {
			t.Fatalf("claim after the key's task ended = %v, want %s", claimedIDs(next), k1[1].ID)
		}
		// A waiting task cancelled frees nothing; a cancelled running one
		// frees its slot.
		cancel(t, s, at(5*time.Second), tenantA, k1[2].ID)
		if got := claim(t, s, at(5*time.Second+ms), dockettype.PoolOnline, 10); len(got) != 0 {
			t.Fatalf("claim after a waiting task was cancelled = %v, want none", claimedIDs(got))
		}
		k1more := admitN(t, s, at(6*time.Second), tenantA, 1, keyed("customer-1"))
		cancel(t, s, at(7*time.Second), tenantA, k1[1].ID)
		if got := claim(t, s, at(7*time.Second+ms), dockettype.PoolOnline, 10); len(got) != 1 || got[0].Task.ID != k1more[0].ID {
			t.Fatalf("claim after the running task was cancelled = %v, want %s", claimedIDs(got), k1more[0].ID)
		}
	})

	su.run(t, "FinishHandsTheFreedKeySlotToTheNextTask", func(t *testing.T, s store.Store) {
		tasks := admitN(t, s, at(0), tenantA, 3, func(it *store.AdmitItem) { it.ConcurrencyKey, it.TraceUnsampled = "k", true })
		got := claim(t, s, at(time.Second), dockettype.PoolOnline, 10)
		if len(got) != 1 || got[0].Task.ID != tasks[0].ID {
			t.Fatalf("claim = %v, want %s", claimedIDs(got), tasks[0].ID)
		}
		// finish writes lease's success with room for 4 starts in queue,
		// and returns the hand-off with what it started.
		finish := func(now time.Time, lease store.Lease, queue store.Queue) *store.HandOff {
			t.Helper()
			h := &store.HandOff{Queue: queue, Owner: "node-h", Expires: at(time.Minute), Limit: 4}
			if _, err := s.Finish(t.Context(), &store.FinishParams{Now: now, Items: []store.FinishItem{succeed(lease)}, HandOff: h}); err != nil {
				t.Fatal(err)
			}
			return h
		}
		// Another queue's room starts nothing: the next task becomes ready.
		h := finish(at(2*time.Second), got[0].Lease(), store.PoolQueue(dockettype.PoolOffline))
		if len(h.Started) != 0 {
			t.Fatalf("hand-off to the offline queue started %v, want none", claimedIDs(h.Started))
		}
		next := claim(t, s, at(3*time.Second), dockettype.PoolOnline, 10)
		if len(next) != 1 || next[0].Task.ID != tasks[1].ID {
			t.Fatalf("claim after the finish = %v, want %s", claimedIDs(next), tasks[1].ID)
		}
		// The pool's own queue: the finish starts the key's next task,
		// leased to the finishing node, with its event.
		h = finish(at(4*time.Second), next[0].Lease(), store.PoolQueue(dockettype.PoolOnline))
		if len(h.Started) != 1 || h.Started[0].Task.ID != tasks[2].ID {
			t.Fatalf("hand-off started %v, want %s", claimedIDs(h.Started), tasks[2].ID)
		}
		if st := h.Started[0]; st.Task.State != dockettype.StateRunning || st.Task.Attempt != 1 || len(st.Input) == 0 || !st.TraceUnsampled {
			t.Errorf("handed task = state %s attempt %d input %q unsampled %v, want running, attempt 1, its input, unsampled",
				st.Task.State, st.Task.Attempt, st.Input, st.TraceUnsampled)
		}
		if got := claim(t, s, at(4*time.Second+ms), dockettype.PoolOnline, 10); len(got) != 0 {
			t.Fatalf("claim after the hand-off = %v, want none (the key's one slot is taken)", claimedIDs(got))
		}
		evs := listEvents(t, s, tenantA, tasks[2].ID)
		if last := evs[len(evs)-1]; last.To != dockettype.StateRunning || last.Epoch != h.Started[0].Task.LeaseEpoch {
			t.Errorf("last event of the handed task = %+v, want → running at epoch %d", last, h.Started[0].Task.LeaseEpoch)
		}
		// Its lease is the finishing node's: its outcome is fenced by it.
		finishOne(t, s, at(5*time.Second), succeed(h.Started[0].Lease()), true)

		// With a pause in force the hand-off starts nothing; the task waits
		// on the pause and starts after the resume.
		more := admitN(t, s, at(6*time.Second), tenantA, 2, func(it *store.AdmitItem) { it.ConcurrencyKey = "k2" })
		first := claim(t, s, at(7*time.Second), dockettype.PoolOnline, 10)
		setPaused(t, s, store.FlowTarget{Scope: store.ScopeTenant, Key: tenantA}, true)
		h = finish(at(8*time.Second), first[0].Lease(), store.PoolQueue(dockettype.PoolOnline))
		if len(h.Started) != 0 {
			t.Fatalf("hand-off under a pause started %v, want none", claimedIDs(h.Started))
		}
		if w := getTask(t, s, tenantA, more[1].ID).WaitingOn; string(w) != store.WaitingOnPaused {
			t.Errorf("the key's next task under a pause waits on %v, want paused", w)
		}
		setPaused(t, s, store.FlowTarget{Scope: store.ScopeTenant, Key: tenantA}, false)
		if got := claim(t, s, at(9*time.Second), dockettype.PoolOnline, 10); len(got) != 1 || got[0].Task.ID != more[1].ID {
			t.Fatalf("claim after the resume = %v, want %s", claimedIDs(got), more[1].ID)
		}

		// A pause or rate limit of another tenant, workflow or pool holds
		// back no hand-off; one of the task's workflow or pool does.
		rate := 1000
		setPaused(t, s, store.FlowTarget{Scope: store.ScopeTenant, Key: tenantB}, true)
		setPaused(t, s, store.FlowTarget{Scope: store.ScopePool, Key: string(dockettype.PoolOffline)}, true)
		if _, err := s.UpdateFlowRule(t.Context(), &store.UpdateFlowRuleParams{Now: at(9 * time.Second),
			Target: store.FlowTarget{Scope: store.ScopeWorkflow, Key: "demo.other"}, RatePerSecond: &rate}); err != nil {
			t.Fatal(err)
		}
		chain := admitN(t, s, at(10*time.Second), tenantA, 4, func(it *store.AdmitItem) { it.ConcurrencyKey = "k3" })
		running := claim(t, s, at(11*time.Second), dockettype.PoolOnline, 10)
		if len(running) != 1 || running[0].Task.ID != chain[0].ID {
			t.Fatalf("claim of the third key = %v, want %s", claimedIDs(running), chain[0].ID)
		}
		h = finish(at(12*time.Second), running[0].Lease(), store.PoolQueue(dockettype.PoolOnline))
		if len(h.Started) != 1 || h.Started[0].Task.ID != chain[1].ID {
			t.Fatalf("hand-off beside other targets' rules started %v, want %s", claimedIDs(h.Started), chain[1].ID)
		}
		// Under a pause of the task's workflow, then of its pool, the
		// finish hands nothing off; a claim starts the next task after the
		// resume.
		current := h.Started[0]
		for i, target := range []store.FlowTarget{
			{Scope: store.ScopeWorkflow, Key: "demo.echo"},
			{Scope: store.ScopePool, Key: string(dockettype.PoolOnline)},
		} {
			setPaused(t, s, target, true)
			now := at(13*time.Second + time.Duration(i)*time.Second)
			h = finish(now, current.Lease(), store.PoolQueue(dockettype.PoolOnline))
			if len(h.Started) != 0 {
				t.Fatalf("hand-off under a pause of %v started %v, want none", target, claimedIDs(h.Started))
			}
			setPaused(t, s, target, false)
			next := claim(t, s, now.Add(ms), dockettype.PoolOnline, 10)
			if len(next) != 1 || next[0].Task.ID != chain[2+i].ID {
				t.Fatalf("claim after the resume of %v = %v, want %s", target, claimedIDs(next), chain[2+i].ID)
			}
			current = next[0]
		}
	})

	su.run(t, "HandOffStartsTheHighestPriorityWithinItsRoom", func(t *testing.T, s store.Store) {
		keys := []string{"ka", "kb", "kc"}
		var firsts []*dockettype.Task
		for i, k := range keys {
			firsts = append(firsts, admitN(t, s, at(time.Duration(i)*ms), tenantA, 1, func(it *store.AdmitItem) { it.ConcurrencyKey = k })...)
		}
		waiting := map[string]string{} // key -> its waiting task
		for i, k := range keys {
			w := admitN(t, s, at(10*ms+time.Duration(i)*ms), tenantA, 1, func(it *store.AdmitItem) { it.ConcurrencyKey, it.Priority = k, 5*i })
			waiting[k] = w[0].ID
		}
		running := claim(t, s, at(time.Second), dockettype.PoolOnline, 10)
		if !sameSet(claimedIDs(running), []string{firsts[0].ID, firsts[1].ID, firsts[2].ID}) {
			t.Fatalf("claim = %v, want each key's first task", claimedIDs(running))
		}
		items := make([]store.FinishItem, len(running))
		for i, c := range running {
			items[i] = succeed(c.Lease())
		}
		// Room for two: the waiting tasks of priority 10 and 5 start; the
		// third gets its key's slot and is ready for a claim.
		h := &store.HandOff{Queue: store.PoolQueue(dockettype.PoolOnline), Owner: "node-h", Expires: at(time.Minute), Limit: 2}
		if _, err := s.Finish(t.Context(), &store.FinishParams{Now: at(2 * time.Second), Items: items, HandOff: h}); err != nil {
			t.Fatal(err)
		}
		if want := []string{waiting["kc"], waiting["kb"]}; !sameSet(claimedIDs(h.Started), want) {
			t.Fatalf("hand-off started %v, want the two of highest priority %v", claimedIDs(h.Started), want)
		}
		if got := claim(t, s, at(3*time.Second), dockettype.PoolOnline, 10); len(got) != 1 || got[0].Task.ID != waiting["ka"] {
			t.Fatalf("claim after the hand-off = %v, want %s", claimedIDs(got), waiting["ka"])
		}
	})

	su.run(t, "HandOffLeavesATaskNotYetDueDelayedWithItsSlot", func(t *testing.T, s store.Store) {
		k := func(it *store.AdmitItem) { it.ConcurrencyKey = "k" }
		first := admitN(t, s, at(0), tenantA, 1, k)
		later := admitN(t, s, at(ms), tenantA, 1, func(it *store.AdmitItem) { k(it); it.RunAt = at(time.Minute) })
		running := claim(t, s, at(time.Second), dockettype.PoolOnline, 10)
		if len(running) != 1 || running[0].Task.ID != first[0].ID {
			t.Fatalf("claim = %v, want %s", claimedIDs(running), first[0].ID)
		}
		h := &store.HandOff{Queue: store.PoolQueue(dockettype.PoolOnline), Owner: "node-h", Expires: at(time.Minute), Limit: 4}
		if _, err := s.Finish(t.Context(), &store.FinishParams{Now: at(2 * time.Second),
			Items: []store.FinishItem{succeed(running[0].Lease())}, HandOff: h}); err != nil {
			t.Fatal(err)
		}
		if len(h.Started) != 0 {
			t.Fatalf("hand-off started %v, want none: the next task's run_at is ahead", claimedIDs(h.Started))
		}
		if w := getTaskAt(t, s, tenantA, later[0].ID, at(3*time.Second)).WaitingOn; string(w) != store.WaitingOnRunAt {
			t.Errorf("the key's next task waits on %v, want run_at", w)
		}
		// It holds the key's slot: another task of the key waits on it.
		third := admitN(t, s, at(4*time.Second), tenantA, 1, k)
		if got := claim(t, s, at(5*time.Second), dockettype.PoolOnline, 10); len(got) != 0 {
			t.Fatalf("claim before the run_at = %v, want none", claimedIDs(got))
		}
		if got := claim(t, s, at(61*time.Second), dockettype.PoolOnline, 10); len(got) != 1 || got[0].Task.ID != later[0].ID {
			t.Fatalf("claim after the run_at = %v, want %s (and not %s, which waits on the key)", claimedIDs(got), later[0].ID, third[0].ID)
		}
	})

	su.run(t, "KeySlotsStayExactThroughHandOffsAndReleases", func(t *testing.T, s store.Store) {
		two := 2
		if _, err := s.UpdateFlowRule(t.Context(), &store.UpdateFlowRuleParams{Now: at(0),
			Target: store.FlowTarget{Scope: store.ScopeWorkflow, Key: "demo.echo"}, ConcurrencyPerKey: &two}); err != nil {
			t.Fatal(err)
		}
		k := func(it *store.AdmitItem) { it.ConcurrencyKey = "k" }
		abc := admitN(t, s, at(ms), tenantA, 3, k)
		running := claim(t, s, at(time.Second), dockettype.PoolOnline, 10)
		if want := []string{abc[0].ID, abc[1].ID}; !sameSet(claimedIDs(running), want) {
			t.Fatalf("claim = %v, want the key's first two %v", claimedIDs(running), want)
		}
		// Both end in one finish: one slot goes to the waiting task, the
		// other is freed.
		h := &store.HandOff{Queue: store.PoolQueue(dockettype.PoolOnline), Owner: "node-h", Expires: at(time.Minute), Limit: 4}
		if _, err := s.Finish(t.Context(), &store.FinishParams{Now: at(2 * time.Second),
			Items: []store.FinishItem{succeed(running[0].Lease()), succeed(running[1].Lease())}, HandOff: h}); err != nil {
			t.Fatal(err)
		}
		if len(h.Started) != 1 || h.Started[0].Task.ID != abc[2].ID {
			t.Fatalf("hand-off started %v, want %s", claimedIDs(h.Started), abc[2].ID)
		}
		// One slot is held (the started task), one is free.
		d := admitN(t, s, at(3*time.Second), tenantA, 1, k)
		dRun := claim(t, s, at(3*time.Second+ms), dockettype.PoolOnline, 10)
		if len(dRun) != 1 || dRun[0].Task.ID != d[0].ID {
			t.Fatalf("claim after a slot was freed = %v, want %s", claimedIDs(dRun), d[0].ID)
		}
		e := admitN(t, s, at(4*time.Second), tenantA, 1, k)
		if got := claim(t, s, at(4*time.Second+ms), dockettype.PoolOnline, 10); len(got) != 0 {
			t.Fatalf("claim with the key's two slots held = %v, want none", claimedIDs(got))
		}
		// A finish without a hand-off gives the slot to the waiting task.
		finishOne(t, s, at(5*time.Second), succeed(h.Started[0].Lease()), true)
		got := claim(t, s, at(5*time.Second+ms), dockettype.PoolOnline, 10)
		if len(got) != 1 || got[0].Task.ID != e[0].ID {
			t.Fatalf("claim after the started task ended = %v, want %s", claimedIDs(got), e[0].ID)
		}
		// Every slot freed: two new tasks of the key start at once.
		finishOne(t, s, at(6*time.Second), succeed(dRun[0].Lease()), true)
		finishOne(t, s, at(6*time.Second+ms), succeed(got[0].Lease()), true)
		fg := admitN(t, s, at(7*time.Second), tenantA, 2, k)
		if got := claim(t, s, at(7*time.Second+ms), dockettype.PoolOnline, 10); !sameSet(claimedIDs(got), []string{fg[0].ID, fg[1].ID}) {
			t.Fatalf("claim with every slot free = %v, want %v", claimedIDs(got), []string{fg[0].ID, fg[1].ID})
		}
	})

	su.run(t, "RaisingConcurrencyPerKeyStartsWaitingTasks", func(t *testing.T, s store.Store) {
		tasks := admitN(t, s, at(0), tenantA, 4, func(it *store.AdmitItem) { it.ConcurrencyKey = "k" })
		if got := claim(t, s, at(time.Second), dockettype.PoolOnline, 10); len(got) != 1 {
			t.Fatalf("claim with concurrency 1 = %v, want 1", claimedIDs(got))
		}
		three := 3
		if _, err := s.UpdateFlowRule(t.Context(), &store.UpdateFlowRuleParams{Now: at(2 * time.Second),
			Target: store.FlowTarget{Scope: store.ScopeWorkflow, Key: "demo.echo"}, ConcurrencyPerKey: &three}); err != nil {
			t.Fatal(err)
		}
		got := claim(t, s, at(3*time.Second), dockettype.PoolOnline, 10)
		if want := []string{tasks[1].ID, tasks[2].ID}; !sameSet(claimedIDs(got), want) {
			t.Fatalf("claim after raising the limit to 3 = %v, want %v", claimedIDs(got), want)
		}
	})

	su.run(t, "RateLimitBoundsStartsInEverySecond", func(t *testing.T, s store.Store) {
		const rate, burst = 100, 10
		limited := admitN(t, s, at(0), tenantA, 300, func(it *store.AdmitItem) { it.Workflow = "demo.sleep" })
		free := admitN(t, s, at(0), tenantA, 30, nil)
		r, b := rate, burst
		if _, err := s.UpdateFlowRule(t.Context(), &store.UpdateFlowRuleParams{Now: at(0),
			Target: store.FlowTarget{Scope: store.ScopeWorkflow, Key: "demo.sleep"}, RatePerSecond: &r, Burst: &b}); err != nil {
			t.Fatal(err)
		}
		isLimited := map[string]bool{}
		for _, task := range limited {
			isLimited[task.ID] = true
		}
		var starts []time.Time
		freeStarted, throttled := 0, 0
		// A claim every 7 ms for 1.5 s, the limited tasks first in line.
		for step := range 215 {
			now := at(time.Second + time.Duration(step)*7*ms)
			var out store.ClaimOutcome
			got, err := s.Claim(t.Context(), &store.ClaimParams{Now: now, Queue: store.PoolQueue(dockettype.PoolOnline),
				Owner: "node-1", Limit: 8, LeaseTTL: ttl, Outcome: &out})
			if err != nil {
				t.Fatal(err)
			}
			if out.Throttled > 0 {
				throttled++
				if !out.RetryAt.After(now) {
					t.Fatalf("throttled claim at %v says retry at %v", now, out.RetryAt)
				}
			}
			for _, c := range got {
				if isLimited[c.Task.ID] {
					starts = append(starts, now)
				} else {
					freeStarted++
				}
			}
		}
		if freeStarted != len(free) {
			t.Errorf("%d of the %d tasks of the unlimited workflow started, want all: a throttled workflow held them up", freeStarted, len(free))
		}
		if throttled == 0 {
			t.Error("no claim reported being throttled")
		}
		if worst := maxInWindow(starts, time.Second); worst > rate+burst {
			t.Errorf("%d starts in one second, want at most rate+burst = %d", worst, rate+burst)
		}
		// 1.5 s at 100/s: about 150 starts (the limit holds steadily).
		if n := len(starts); n < 140 || n > 160 {
			t.Errorf("%d starts in 1.5 s at %d/s, want about 150", n, rate)
		}
		if w := getTaskAt(t, s, tenantA, limited[len(limited)-1].ID, at(2500*ms)).WaitingOn; string(w) != store.WaitingOnRateLimit {
			t.Errorf("a throttled task waits on %v, want rate_limit", w)
		}
	})

	su.run(t, "TenantRateLimitDoesNotHoldUpOtherTenants", func(t *testing.T, s store.Store) {
		admitN(t, s, at(0), tenantA, 50, nil)
		bs := admitN(t, s, at(ms), tenantB, 5, nil)
		one, zero := 1, 0
		if _, err := s.UpdateFlowRule(t.Context(), &store.UpdateFlowRuleParams{Now: at(0),
			Target: store.FlowTarget{Scope: store.ScopeTenant, Key: tenantA}, RatePerSecond: &one, Burst: &zero}); err != nil {
			t.Fatal(err)
		}
		started := map[string]int{}
		for step := range 20 {
			for _, c := range claim(t, s, at(time.Second+time.Duration(step)*20*ms), dockettype.PoolOnline, 4) {
				started[c.Task.Tenant]++
			}
		}
		if started[tenantB] != len(bs) || started[tenantA] > 1 {
			t.Errorf("started %v in 400 ms with %s at 1/s, want all %d of %s and at most 1 of %s", started, tenantA, len(bs), tenantB, tenantA)
		}
	})
}

func setPaused(t *testing.T, s store.Store, target store.FlowTarget, paused bool) []store.Pause {
	t.Helper()
	return pause(t, s, &store.SetPausedParams{Now: at(0), Target: target, Paused: paused})
}

func pause(t *testing.T, s store.Store, p *store.SetPausedParams) []store.Pause {
	t.Helper()
	out, err := s.SetPaused(t.Context(), p)
	if err != nil {
		t.Fatalf("SetPaused(%+v): %v", p, err)
	}
	return out
}

func getTaskAt(t *testing.T, s store.Store, tenant, id string, now time.Time) *dockettype.Task {
	t.Helper()
	task, err := s.GetTask(t.Context(), &store.GetTaskParams{Tenant: tenant, TaskID: id, Now: now})
	if err != nil {
		t.Fatalf("GetTask(%s): %v", id, err)
	}
	return task
}

// maxInWindow is the most times (sorted) within any window of length d,
// counted [t, t+d).
func maxInWindow(times []time.Time, d time.Duration) int {
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	most, j := 0, 0
	for i := range times {
		for times[j].Add(d).Compare(times[i]) <= 0 {
			j++
		}
		most = max(most, i-j+1)
	}
	return most
}

func getFlowRule(t *testing.T, s store.Store, target store.FlowTarget) *store.FlowRule {
	t.Helper()
	r, err := s.GetFlowRule(t.Context(), target)
	if err != nil {
		t.Fatalf("GetFlowRule(%v): %v", target, err)
	}
	return r
}
