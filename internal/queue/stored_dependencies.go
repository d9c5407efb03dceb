package queue

import (
	"context"
	"fmt"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// dependencyReader is the store call that reads a task's dependencies.
type dependencyReader interface {
	DependencyResults(ctx context.Context, params *store.GetTaskParams) ([]dockettype.DependencyResult, error)
}

// runStore is what an in-process worker writes and reads for the
// workflow it runs.
type runStore interface {
	evidenceAppender
	dependencyReader
}

// storedDependencies is the DependencyResultReader a workflow gets: it
// reads, when asked, the outcome of the tasks its task depends on.
type storedDependencies struct {
	store          dependencyReader
	tenant, taskID string
	queryTimeout   time.Duration
}

func (d *storedDependencies) DependencyResults(ctx context.Context) ([]dockettype.DependencyResult, error) {
	qctx, cancel := context.WithTimeout(ctx, d.queryTimeout)
	defer cancel()
	out, err := d.store.DependencyResults(qctx, &store.GetTaskParams{Tenant: d.tenant, TaskID: d.taskID})
	if err != nil {
		return nil, fmt.Errorf("read dependency results: %w", err)
	}
	return out, nil
}
