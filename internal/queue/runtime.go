package queue

import (
	"context"
	"encoding/json"

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
}

// Invocation is one attempt of one task, as the server claimed it.
type Invocation struct {
	Task     dockettype.Task // a copy of the claimed row (attempt, lease epoch, deadline, …)
	Input    json.RawMessage
	Evidence EvidenceWriter // fenced by the attempt's lease
}

// EvidenceWriter writes evidence under the attempt's lease.
type EvidenceWriter interface {
	WriteEvidence(ctx context.Context, items []dockettype.EvidenceItem) error
}
