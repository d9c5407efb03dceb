// Package binding holds the runtime binding the server hands to a workflow.
//
// The type is re-exported as workflow.Binding. Its fields are unexported and
// its constructor lives in this internal package, so code outside Docket's
// module can read a binding but never build or alter one: only the server
// creates bindings, from the task row it claimed.
package binding

import (
	"context"
	"time"

	"github.com/docket-dev/docket/dockettype"
)

// EvidenceSink writes evidence fenced by the binding's lease.
type EvidenceSink interface {
	WriteEvidence(ctx context.Context, items []dockettype.EvidenceItem) error
}

// Params are the server-owned facts a binding carries.
type Params struct {
	TaskID        string
	Tenant        string
	Author        string
	Workflow      string
	Pool          dockettype.Pool
	Attempt       int
	LeaseEpoch    int64
	Deadline      time.Time
	ConfigVersion string
	TraceID       string
	Evidence      EvidenceSink
}

// Binding is the server-created context of one attempt of one task.
type Binding struct {
	p Params
}

// New is called only by Docket's runtime when it invokes a workflow.
func New(p Params) *Binding { return &Binding{p: p} }

func (b *Binding) TaskID() string        { return b.p.TaskID }
func (b *Binding) Tenant() string        { return b.p.Tenant }
func (b *Binding) Author() string        { return b.p.Author }
func (b *Binding) Workflow() string      { return b.p.Workflow }
func (b *Binding) Pool() dockettype.Pool { return b.p.Pool }
func (b *Binding) Attempt() int          { return b.p.Attempt }
func (b *Binding) LeaseEpoch() int64     { return b.p.LeaseEpoch }
func (b *Binding) Deadline() time.Time   { return b.p.Deadline }
func (b *Binding) ConfigVersion() string { return b.p.ConfigVersion }
func (b *Binding) TraceID() string       { return b.p.TraceID }

// RecordEvidence appends evidence to the task under this attempt's lease.
// Its errors match (errors.Is) dockettype.ErrLeaseLost once the lease is no
// longer current (the task was cancelled, timed out or recovered),
// dockettype.ErrEvidenceUnavailable when the store cannot be reached, and
// dockettype.ErrNoEvidenceSink on a binding the server did not create.
func (b *Binding) RecordEvidence(ctx context.Context, items ...dockettype.EvidenceItem) error {
	if b == nil || b.p.Evidence == nil {
		return dockettype.ErrNoEvidenceSink
	}
	if len(items) == 0 {
		return nil
	}
	return b.p.Evidence.WriteEvidence(ctx, items)
}
