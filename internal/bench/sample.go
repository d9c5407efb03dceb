package bench

import (
	"context"
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

// readChunk is how many tasks one GetTasks call reads.
const readChunk = 500

// sample is a uniform random sample (reservoir) of the run's task IDs. It
// is safe for concurrent use.
type sample struct {
	mu   sync.Mutex
	ids  []string
	seen int
	rnd  *rand.Rand
}

func newSample(size int) *sample {
	return &sample{ids: make([]string, 0, size), rnd: rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))}
}

// add offers one task ID to the sample.
func (s *sample) add(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen++
	if len(s.ids) < cap(s.ids) {
		s.ids = append(s.ids, id)
		return
	}
	if j := s.rnd.IntN(s.seen); j < len(s.ids) {
		s.ids[j] = id
	}
}

// tasks reads the sampled tasks.
func (s *sample) tasks(ctx context.Context, st store.Store) ([]*dockettype.Task, error) {
	s.mu.Lock()
	ids := slices.Clone(s.ids)
	s.mu.Unlock()
	out := make([]*dockettype.Task, 0, len(ids))
	for chunk := range slices.Chunk(ids, readChunk) {
		ts, err := st.GetTasks(ctx, chunk)
		if err != nil {
			return nil, fmt.Errorf("read sampled tasks: %w", err)
		}
		out = append(out, ts...)
	}
	if len(out) != len(ids) {
		return nil, fmt.Errorf("read %d of %d sampled tasks", len(out), len(ids))
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
