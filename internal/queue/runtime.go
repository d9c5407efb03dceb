package queue

import (
	"context"
	"encoding/json"
	"time"

	"github.com/docket-dev/docket/dockettype"
)

// Runtime is the execution-runtime interface: the only way the queue
// invokes work. The queue never imports workflow implementations
// (architecture_test.go checks it).
type Runtime interface {
	// Resolve checks that a workflow is registered and returns its default
	// pool and the configuration version a new task pins. An unregistered
	// name is a *dockettype.Error with CodeUnknownWorkflow.
	Resolve(ctx context.Context, workflow string) (Resolution, error)
	// Run invokes the registered entry point of inv.Task.Workflow with a
	// binding built from inv.
	Run(ctx context.Context, inv *Invocation) (json.RawMessage, error)
}

// Resolution is what admission learns about a workflow.
type Resolution struct {
	Pool          dockettype.Pool
	ConfigVersion string
	// Remote marks a workflow that remote workers run (the worker API):
	// its tasks wait in the workflow's own queue of their pool, which the
	// node's pools never claim. Run is never called for it.
	Remote bool
	// DefaultTimeout and DefaultMaxAttempts, when set, replace the
	// server's defaults for a submission that names none.
	DefaultTimeout     time.Duration
	DefaultMaxAttempts int
}

// Invocation is one attempt of one task, as the server claimed it.
type Invocation struct {
	Task     dockettype.Task // a copy of the claimed row (attempt, lease epoch, deadline, …)
	Input    json.RawMessage
	Evidence EvidenceWriter // fenced by the attempt's lease
	// Dependencies reads the outcome of the tasks it depends on.
	Dependencies DependencyResultReader
}

// DependencyResultReader reads the outcome of the tasks a task depends on
// (fan-in).
type DependencyResultReader interface {
	DependencyResults(ctx context.Context) ([]dockettype.DependencyResult, error)
}

// EvidenceWriter writes evidence under the attempt's lease.
type EvidenceWriter interface {
	WriteEvidence(ctx context.Context, items []dockettype.EvidenceItem) error
}
