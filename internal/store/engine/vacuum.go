package engine

import (
	"context"

	"github.com/docket-dev/docket/internal/store"
)

// VacuumingStore is a Store whose backend vacuums its live table when
// asked (store.Vacuumer): Fork returns one for such a backend, so that the
// queue can detect the step on the fork it gives its vacuum scheduler.
type VacuumingStore struct {
	*Store
	v store.Vacuumer
}

var _ store.Vacuumer = (*VacuumingStore)(nil)

// Vacuum runs the backend's vacuum.
func (s *VacuumingStore) Vacuum(ctx context.Context, p *store.VacuumParams) (bool, error) {
	return s.v.Vacuum(ctx, p)
}
