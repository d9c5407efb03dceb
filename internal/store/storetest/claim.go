package storetest

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

func (su suite) testClaim(t *testing.T) {
	su.run(t, "ClaimsReadyTasksOfPool", func(t *testing.T, s store.Store) {
		var online []*store.AdmitItem
		for i := range 3 {
			it := newItem(tenantA)
			it.Input = fmt.Appendf(nil, `{"n": %d}`, i)
			admitOne(t, s, at(time.Duration(i)*ms), it)
			online = append(online, it)
		}
		off := newItem(tenantA)
		off.Pool = dockettype.PoolOffline
		admitOne(t, s, at(3*ms), off)

		now := at(time.Second)
		got := claim(t, s, now, dockettype.PoolOnline, 2)
		if want := []string{online[0].TaskID, online[1].TaskID}; !sameSet(claimedIDs(got), want) {
			t.Fatalf("claimed %v, want the two oldest online tasks %v", claimedIDs(got), want)
		}
		for _, c := range got {
			it := online[0]
			if c.Task.ID == online[1].TaskID {
				it = online[1]
			}
			task := c.Task
			if task.State != dockettype.StateRunning || task.Attempt != 1 || task.LeaseEpoch != 1 || task.Pool != dockettype.PoolOnline {
				t.Errorf("claimed task %s: state %s attempt %d epoch %d pool %s, want running attempt 1 epoch 1 pool online",
					task.ID, task.State, task.Attempt, task.LeaseEpoch, task.Pool)
			}
			wantTimePtr(t, "claimed StartedAt", task.StartedAt, now)
			if !bytes.Equal(c.Input, it.Input) {
				t.Errorf("claimed input = %q, want %q", c.Input, it.Input)
			}
			if l := c.Lease(); l.TaskID != it.TaskID || l.Epoch != 1 {
				t.Errorf("Lease() = %+v, want {%s 1}", l, it.TaskID)
			}
			wantState(t, getTask(t, s, tenantA, task.ID), dockettype.StateRunning, 1)
			ev := lastEvent(t, s, tenantA, task.ID, dockettype.StateQueued, dockettype.StateRunning, 1)
			wantTime(t, "claim event At", ev.At, now)
		}

		got = claim(t, s, at(2*time.Second), dockettype.PoolOnline, 10)
		if want := []string{online[2].TaskID}; !sameSet(claimedIDs(got), want) {
			t.Errorf("second claim got %v, want only the remaining online task %v", claimedIDs(got), want)
		}
		if got := claim(t, s, at(3*time.Second), dockettype.PoolOnline, 10); len(got) != 0 {
			t.Errorf("claim of a drained pool got %v, want none", claimedIDs(got))
		}
		got = claim(t, s, at(4*time.Second), dockettype.PoolOffline, 10)
		if want := []string{off.TaskID}; !sameSet(claimedIDs(got), want) {
			t.Errorf("offline claim got %v, want %v", claimedIDs(got), want)
		}
	})

	su.run(t, "CarriesTheTraceSampledFlag", func(t *testing.T, s store.Store) {
		sampled, unsampled := newItem(tenantA), newItem(tenantA)
		unsampled.TraceUnsampled = true
		admit(t, s, at(0), sampled, unsampled)
		got := claim(t, s, at(time.Second), dockettype.PoolOnline, 10)
		if len(got) != 2 {
			t.Fatalf("claim = %v, want both tasks", claimedIDs(got))
		}
		for _, c := range got {
			if want := c.Task.ID == unsampled.TaskID; c.TraceUnsampled != want {
				t.Errorf("claimed %s: TraceUnsampled = %v, want %v", c.Task.ID, c.TraceUnsampled, want)
			}
		}
	})

	su.run(t, "SaysWhetherReadyWorkRemains", func(t *testing.T, s store.Store) {
		claimMore := func(now time.Time, limit int) ([]*store.ClaimedTask, bool) {
			t.Helper()
			var out store.ClaimOutcome
			got, err := s.Claim(t.Context(), &store.ClaimParams{Now: now, Queue: store.PoolQueue(dockettype.PoolOnline),
				Owner: "node-1", Limit: limit, LeaseTTL: ttl, Outcome: &out})
			if err != nil {
				t.Fatal(err)
			}
			return got, out.More
		}
		admitN(t, s, at(0), tenantA, 3, nil)
		admitN(t, s, at(ms), tenantB, 2, nil)
		// Limit 4 of 5 ready tasks: more remain.
		if got, more := claimMore(at(time.Second), 4); len(got) != 4 || !more {
			t.Errorf("claim of 4 of 5 ready = %d tasks, more %v; want 4, true", len(got), more)
		}
		// The last one, with room to spare: nothing remains.
		if got, more := claimMore(at(2*time.Second), 4); len(got) != 1 || more {
			t.Errorf("claim of the last ready task = %d tasks, more %v; want 1, false", len(got), more)
		}
		// Exactly the limit, and nothing behind it: all taken.
		admitN(t, s, at(3*time.Second), tenantA, 2, nil)
		if got, more := claimMore(at(4*time.Second), 2); len(got) != 2 || more {
			t.Errorf("claim of exactly the 2 ready tasks = %d tasks, more %v; want 2, false", len(got), more)
		}
		if got, more := claimMore(at(5*time.Second), 2); len(got) != 0 || more {
			t.Errorf("claim of an empty queue = %d tasks, more %v; want 0, false", len(got), more)
		}
	})

	su.run(t, "EmptyQueue", func(t *testing.T, s store.Store) {
		got, err := s.Claim(t.Context(), &store.ClaimParams{Now: at(0), Queue: store.PoolQueue(dockettype.PoolOnline), Owner: "node-1", Limit: 5, LeaseTTL: ttl})
		if err != nil || len(got) != 0 {
			t.Errorf("Claim on an empty store = %v, %v; want no tasks and no error", claimedIDs(got), err)
		}
	})

	su.run(t, "PriorityThenAge", func(t *testing.T, s store.Store) {
		priorities := []int{0, 5, 1, 5, 10}
		ids := make([]string, len(priorities))
		for i, p := range priorities {
			it := newItem(tenantA)
			it.Priority = p
			ids[i] = admitOne(t, s, at(time.Duration(i)*ms), it).ID
		}
		want := []string{ids[4], ids[1], ids[3], ids[2], ids[0]}
		var got []string
		for i := range priorities {
			got = append(got, claimOne(t, s, at(time.Second+time.Duration(i)*ms)).Task.ID)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("claim %d got priority %d task %s, want priority %d task %s (order: highest priority, then oldest)",
					i, priorities[slices.Index(ids, got[i])], got[i], priorities[slices.Index(ids, want[i])], want[i])
			}
		}
	})

	su.run(t, "LeaseLastsTTL", func(t *testing.T, s store.Store) {
		c := admitClaimed(t, s, at(0), newItem(tenantA))
		if got := findExpired(t, s, at(ttl-ms), 10); len(got) != 0 {
			t.Errorf("expired leases 1ms before Now+TTL = %v, want none", got)
		}
		got := findExpired(t, s, at(ttl), 10)
		if len(got) != 1 || got[0].Lease != c.Lease() {
			t.Errorf("expired leases at Now+TTL = %v, want the lease %+v", got, c.Lease())
		}
	})
}
