package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// sampleSize bounds the tasks a run reads back for latency and the final
// check, so that the bench's own memory and reads stay small whatever N.
const sampleSize = 10_000

// readers is how many sampled tasks are read at once.
const readers = 8

// sample is a uniform random sample (reservoir) of the run's task IDs. It
// is safe for concurrent use.
type sample struct {
	mu   sync.Mutex
	ids  []taskRef
	seen int
	rnd  *rand.Rand
}

// taskRef names a task of a tenant (reads are scoped to a tenant).
type taskRef struct{ tenant, id string }

func newSample(size int) *sample {
	return &sample{ids: make([]taskRef, 0, size), rnd: rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))}
}

// add offers one task of a tenant to the sample.
func (s *sample) add(tenant, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen++
	ref := taskRef{tenant, id}
	if len(s.ids) < cap(s.ids) {
		s.ids = append(s.ids, ref)
		return
	}
	if j := s.rnd.IntN(s.seen); j < len(s.ids) {
		s.ids[j] = ref
	}
}

// tasks reads the sampled tasks.
func (s *sample) tasks(ctx context.Context, st store.Store) ([]*dockettype.Task, error) {
	s.mu.Lock()
	ids := slices.Clone(s.ids)
	s.mu.Unlock()
	out := make([]*dockettype.Task, len(ids))
	errs := make([]error, readers)
	var wg sync.WaitGroup
	for r := range readers {
		wg.Go(func() {
			for i := r; i < len(ids); i += readers {
				t, err := st.GetTask(ctx, &store.GetTaskParams{Tenant: ids[i].tenant, TaskID: ids[i].id})
				if err != nil {
					errs[r] = fmt.Errorf("read sampled task: %w", err)
					return
				}
				out[i] = t
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// allTerminal reports whether every sampled task is terminal.
func (s *sample) allTerminal(ctx context.Context, st store.Store) (bool, error) {
	ts, err := s.tasks(ctx, st)
	if err != nil {
		return false, err
	}
	for _, t := range ts {
		if !t.State.Terminal() {
			return false, nil
		}
	}
	return true, nil
}

// admissionToFinish returns the latencies (created_at → finished_at),
// sorted, of the tasks admitted at or after from that finished at or before
// until (a zero until: whenever).
func admissionToFinish(ts []*dockettype.Task, from, until time.Time) []time.Duration {
	var out []time.Duration
	for _, t := range ts {
		if t.FinishedAt == nil || t.CreatedAt.Before(from) || (!until.IsZero() && t.FinishedAt.After(until)) {
			continue
		}
		out = append(out, t.FinishedAt.Sub(t.CreatedAt))
	}
	slices.Sort(out)
	return out
}

// percentileMS is the nearest-rank p-th percentile (0 < p <= 1) of sorted
// latencies, in milliseconds; 0 without latencies.
func percentileMS(sorted []time.Duration, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	i = min(max(i, 0), len(sorted)-1)
	return float64(sorted[i]) / float64(time.Millisecond)
}
