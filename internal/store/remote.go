package store

import (
	"context"
	"time"

	"github.com/docket-dev/docket/dockettype"
)

// Workflows stores the remote workflows an admin registered: trusted entry
// points that remote workers run. A name is either compiled into the
// server or registered here, never both (the caller checks the first).
type Workflows interface {
	// PutWorkflow creates or replaces a remote workflow and reports
	// whether it created it.
	PutWorkflow(ctx context.Context, params *PutWorkflowParams) (wf *Workflow, created bool, err error)
	// GetWorkflow returns one remote workflow, or ErrNotFound.
	GetWorkflow(ctx context.Context, name string) (*Workflow, error)
	// ListWorkflows returns every remote workflow, by name.
	ListWorkflows(ctx context.Context) ([]*Workflow, error)
	// DeleteWorkflow removes a remote workflow (ErrNotFound when there is
	// none). Tasks already admitted keep their queue: workers still
	// serving the name may finish them; otherwise their deadline ends them.
	DeleteWorkflow(ctx context.Context, name string) error
	// LeaseKey returns the installation's secret for lease tokens, storing
	// candidate first when there is none yet, so that every node of an
	// installation signs and checks tokens with the same key.
	LeaseKey(ctx context.Context, candidate []byte) ([]byte, error)
}

// Workers records the remote workers the nodes have seen, so that an
// operator sees every node's workers in one list.
type Workers interface {
	// UpsertWorkers writes the workers' latest sightings in one
	// transaction (a node flushes what it saw every few seconds).
	UpsertWorkers(ctx context.Context, workers []*Worker) error
	// ListWorkers returns the workers seen at or after since, most
	// recently seen first.
	ListWorkers(ctx context.Context, since time.Time) ([]*Worker, error)
	// DeleteWorkersBefore forgets workers last seen before the time.
	DeleteWorkersBefore(ctx context.Context, before time.Time) (int, error)
}

// PutWorkflowParams registers a remote workflow.
type PutWorkflowParams struct {
	Now         time.Time
	Name        string
	Pool        dockettype.Pool
	TimeoutMS   int64 // default deadline of its tasks; 0: the server's
	MaxAttempts int   // default attempts of its tasks; 0: the server's
}

// Workflow is a registered remote workflow.
type Workflow struct {
	Name        string
	Pool        dockettype.Pool
	TimeoutMS   int64
	MaxAttempts int
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// Worker is a remote worker process as last seen by a node.
type Worker struct {
	ID         string // the worker's own ID, unique per key
	KeyID      string
	Tenant     string // the key's tenant
	AllTenants bool
	Workflows  []string
	Slots      int
	Leases     int // leases it held at its last call
	SDK        string
	LastSeenAt time.Time
}
