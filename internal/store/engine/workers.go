package engine

import (
	"cmp"
	"context"
	"slices"

	"github.com/docket-dev/docket/internal/store"
)

// UpsertWorkers writes the workers' sightings in key order (key ID, then
// worker ID), so that two nodes flushing overlapping sets lock the rows in
// the same order.
func (s *Store) UpsertWorkers(ctx context.Context, workers []*store.Worker) error {
	sorted := slices.Clone(workers)
	slices.SortFunc(sorted, func(a, b *store.Worker) int {
		return cmp.Or(cmp.Compare(a.KeyID, b.KeyID), cmp.Compare(a.ID, b.ID))
	})
	return s.Plain.UpsertWorkers(ctx, sorted)
}
