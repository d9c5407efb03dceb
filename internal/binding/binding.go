// Package binding is how Docket's runtime builds a workflow.Binding.
//
// The type lives in package workflow, where workflow authors read its
// methods; its fields are unexported and it has no exported constructor,
// so code outside Docket can read a binding but never build one that
// records evidence, nor alter one: only the server creates bindings, from
// the task row it claimed. Package workflow hands its constructor to this
// internal package when it is initialised, and the runtime calls it:
//
//	b := binding.New[*workflow.Binding](binding.Params{TaskID: task.ID, …})
package binding

import (
	"context"
	"time"

	"github.com/docket-dev/docket/dockettype"
)

// DependencySource reads the outcome of the tasks the bound task depends
// on.
type DependencySource interface {
	DependencyResults(ctx context.Context) ([]dockettype.DependencyResult, error)
}

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
	Dependencies  DependencySource
}

// constructor is package workflow's func(Params) *workflow.Binding.
var constructor any

// SetConstructor is called once, by package workflow as it is initialised,
// with its unexported constructor.
func SetConstructor[B any](f func(Params) B) { constructor = f }

// New builds a binding of type B (*workflow.Binding) with the constructor
// package workflow set. It panics when B is not that type.
func New[B any](p Params) B {
	f, ok := constructor.(func(Params) B)
	if !ok {
		panic("binding: no constructor set for this type (package workflow sets it)")
	}
	return f(p)
}
