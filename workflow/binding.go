package workflow

import (
	"context"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/binding"
)

// Binding is the server-created context of one attempt of one task: the
// facts the server read from the task row it claimed, never from the
// request that submitted it. Only Docket creates bindings; workflow code
// reads them. A Binding made outside Docket (new(Binding)) is empty and
// records no evidence.
type Binding struct {
	p binding.Params
}

func init() {
	binding.SetConstructor(func(p binding.Params) *Binding { return &Binding{p: p} })
}

// TaskID is the task's ID.
func (b *Binding) TaskID() string { return b.p.TaskID }

// Tenant is the tenant that owns the task (the submitting API key's).
func (b *Binding) Tenant() string { return b.p.Tenant }

// Author is the principal of the API key that submitted the task.
func (b *Binding) Author() string { return b.p.Author }

// Workflow is the registered name the task was submitted to.
func (b *Binding) Workflow() string { return b.p.Workflow }

// Pool is the pool the task runs on.
func (b *Binding) Pool() dockettype.Pool { return b.p.Pool }

// Attempt counts this task's attempts, from 1.
func (b *Binding) Attempt() int { return b.p.Attempt }

// LeaseEpoch is the epoch of this attempt's lease: every write of the
// attempt (its result, its evidence) is fenced by it, and refused once the
// task was cancelled, timed out or recovered.
func (b *Binding) LeaseEpoch() int64 { return b.p.LeaseEpoch }

// Deadline is when the task times out; the context Run gets ends then.
func (b *Binding) Deadline() time.Time { return b.p.Deadline }

// ConfigVersion is the configuration (quality rule set) version the task
// was admitted with, "" when it pins none.
func (b *Binding) ConfigVersion() string { return b.p.ConfigVersion }

// TraceID is the task's W3C trace ID.
func (b *Binding) TraceID() string { return b.p.TraceID }

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

// DependencyResults returns the outcome of each task this one depends on
// (depends_on at submission), in the order given: its state and, once
// terminal, its result or error. A task runs once every dependency has
// succeeded, so all are succeeded unless it was submitted with
// on_dependency_failure "run". It is empty for a task without
// dependencies, and dockettype.ErrNoDependencySource on a binding the
// server did not create.
func (b *Binding) DependencyResults(ctx context.Context) ([]dockettype.DependencyResult, error) {
	if b == nil || b.p.Dependencies == nil {
		return nil, dockettype.ErrNoDependencySource
	}
	return b.p.Dependencies.DependencyResults(ctx)
}

// DependencyResult returns the outcome of one of the tasks this one
// depends on, or dockettype.ErrNotDependency.
func (b *Binding) DependencyResult(ctx context.Context, taskID string) (dockettype.DependencyResult, error) {
	all, err := b.DependencyResults(ctx)
	if err != nil {
		return dockettype.DependencyResult{}, err
	}
	for _, d := range all {
		if d.ID == taskID {
			return d, nil
		}
	}
	return dockettype.DependencyResult{}, dockettype.ErrNotDependency
}
