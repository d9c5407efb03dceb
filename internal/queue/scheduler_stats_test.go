package queue

import (
	"testing"

	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/store/faultstore"
)

// SchedulerStats counts each scheduler's ticks and failures and dates its
// last run and last success on the node's clock.
func TestSchedulerStats(t *testing.T) {
	var fs *faultstore.Store
	h := newHarness(t, withFaults(&fs))
	tk := h.watchTicks()
	started := h.clock.Now()
	h.start()
	for _, ch := range []chan struct{}{tk.recovery, tk.heartbeat, tk.deadline} {
		await(t, "initial", ch)
	}
	byName := func() map[string]SchedulerStats {
		out := map[string]SchedulerStats{}
		for _, s := range h.svc.SchedulerStats() {
			out[s.Name] = s
		}
		return out
	}
	got := byName()
	for _, name := range []string{"recovery", "heartbeat", "deadline"} {
		s, ok := got[name]
		if !ok || s.Runs != 1 || s.Failures != 0 || s.LastRunAt == nil || !s.LastRunAt.Equal(started) ||
			s.LastSuccessAt == nil || !s.LastSuccessAt.Equal(started) {
			t.Fatalf("%s after its first tick = %+v, want 1 run, 0 failures, last run and success at %s", name, s, started)
		}
	}

	// The recovery scan fails: a run and a failure, the last success kept.
	fs.Set("find_expired_leases", faultstore.Fail(store.ErrUnavailable))
	h.clock.Advance(h.svc.cfg.RecoveryInterval)
	await(t, "recovery", tk.recovery)
	s := byName()["recovery"]
	failedAt := started.Add(h.svc.cfg.RecoveryInterval)
	if s.Runs != 2 || s.Failures != 1 || !s.LastRunAt.Equal(failedAt) || !s.LastSuccessAt.Equal(started) {
		t.Fatalf("recovery after a failed tick = %+v, want 2 runs, 1 failure, last run %s, last success %s", s, failedAt, started)
	}
	lag := h.svc.metrics.Schedulers.Snapshot()
	for _, r := range lag {
		if r.Name == "recovery" {
			if got := r.Lag(failedAt); got != h.svc.cfg.RecoveryInterval {
				t.Errorf("recovery lag = %s, want %s (since its last success)", got, h.svc.cfg.RecoveryInterval)
			}
		}
	}
}
