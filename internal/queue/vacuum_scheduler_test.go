package queue

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/docket-dev/docket/internal/metrics"
	"github.com/docket-dev/docket/internal/store"
)

type fakeVacuumer struct {
	mu        sync.Mutex
	params    []store.VacuumParams
	deadlines []bool
	fail      error
}

func (f *fakeVacuumer) Vacuum(ctx context.Context, p *store.VacuumParams) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := ctx.Deadline()
	f.params, f.deadlines = append(f.params, *p), append(f.deadlines, ok)
	return f.fail == nil, f.fail
}

// The vacuum scheduler ticks on the service's clock (at once, then every
// interval), bounds each vacuum by the query timeout, and asks for a quiet
// time of half its period; a failed vacuum is counted under the store
// operation.
func TestVacuumSchedulerTicksOnTheClock(t *testing.T) {
	clock := clockwork.NewFakeClock()
	m := metrics.New()
	var sig schedulerSignals
	sig.ticked.init()
	st := &fakeVacuumer{}
	v := newVacuumScheduler(newBaseService(slog.New(slog.DiscardHandler), clock, "vacuum"),
		schedulerConfig{Interval: 4 * time.Second, QueryTimeout: time.Second}, st, m, &sig)
	if err := v.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer v.Stop()
	<-sig.ticked.ch
	st.mu.Lock()
	st.fail = &store.OpError{Op: "vacuum", Err: store.ErrUnavailable}
	st.mu.Unlock()
	clock.Advance(4 * time.Second)
	<-sig.ticked.ch

	st.mu.Lock()
	defer st.mu.Unlock()
	if len(st.params) != 2 {
		t.Fatalf("%d vacuums, want 2 (one at start, one a period later)", len(st.params))
	}
	for i, p := range st.params {
		if p != (store.VacuumParams{MinDead: vacuumAfterDead, Quiet: 2 * time.Second}) || !st.deadlines[i] {
			t.Errorf("vacuum %d: %+v (deadline %v), want MinDead %d, Quiet 2s, with a deadline", i, p, st.deadlines[i], vacuumAfterDead)
		}
	}
	if n := testutil.ToFloat64(m.StoreErrors.WithLabelValues("vacuum")); n != 1 {
		t.Errorf("store_errors_total{vacuum} = %v, want 1", n)
	}
	if n := testutil.ToFloat64(m.SchedulerErrors.WithLabelValues("vacuum")); n != 1 {
		t.Errorf("scheduler_errors_total{vacuum} = %v, want 1", n)
	}
}
