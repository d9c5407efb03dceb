// Package inprocess is the in-process runtime: it implements the queue's
// Runtime interface by calling the Go workflows registered on a
// workflow.Registry, in the server's own process. It is the only place that
// builds workflow bindings: from the task row the server claimed, never
// from request fields.
//
//	rt := inprocess.New(reg, provider) // provider pins the rule set version; may be nil
//	svc, err := queue.New(st, rt, queue.Config{})
package inprocess

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/binding"
	"github.com/docket-dev/docket/internal/queue"
	"github.com/docket-dev/docket/workflow"
)

// ConfigSource says which configuration version new tasks pin.
type ConfigSource interface {
	CurrentVersion(ctx context.Context) (string, error)
}

// Runtime invokes registered workflows.
type Runtime struct {
	reg    *workflow.Registry
	config ConfigSource
}

var _ queue.Runtime = (*Runtime)(nil)

// New returns a Runtime over reg. config may be nil, in which case tasks
// pin no configuration version.
func New(reg *workflow.Registry, config ConfigSource) *Runtime {
	return &Runtime{reg: reg, config: config}
}

// Names returns the registered workflows' names, sorted.
func (r *Runtime) Names() []string { return r.reg.Names() }

// Pool returns a registered workflow's default pool.
func (r *Runtime) Pool(name string) (dockettype.Pool, bool) {
	def, ok := r.reg.Lookup(name)
	return def.Pool, ok
}

// Resolve reports a registered workflow's default pool and the current
// configuration version.
func (r *Runtime) Resolve(ctx context.Context, name string) (queue.Resolution, error) {
	def, ok := r.reg.Lookup(name)
	if !ok {
		return queue.Resolution{}, dockettype.NewError(dockettype.CodeUnknownWorkflow, fmt.Sprintf("workflow %q is not registered", name))
	}
	res := queue.Resolution{Pool: def.Pool}
	if r.config != nil {
		v, err := r.config.CurrentVersion(ctx)
		if err != nil {
			return queue.Resolution{}, fmt.Errorf("resolve configuration version: %w", err)
		}
		res.ConfigVersion = v
	}
	return res, nil
}

// Run invokes the registered entry point with a binding built from the
// claimed task.
func (r *Runtime) Run(ctx context.Context, inv *queue.Invocation) (json.RawMessage, error) {
	def, ok := r.reg.Lookup(inv.Task.Workflow)
	if !ok {
		// Registered at admission but not on this node: a deployment
		// mismatch. Fail without retrying here.
		return nil, &dockettype.Failure{Code: dockettype.CodeUnknownWorkflow}
	}
	b := binding.New[*workflow.Binding](binding.Params{
		TaskID:        inv.Task.ID,
		Tenant:        inv.Task.Tenant,
		Author:        inv.Task.Author,
		Workflow:      inv.Task.Workflow,
		Pool:          inv.Task.Pool,
		Attempt:       inv.Task.Attempt,
		LeaseEpoch:    inv.Task.LeaseEpoch,
		Deadline:      inv.Task.DeadlineAt,
		ConfigVersion: inv.Task.ConfigVersion,
		TraceID:       inv.Task.TraceID,
		Evidence:      inv.Evidence,
		Dependencies:  inv.Dependencies,
	})
	return def.Run(ctx, b, inv.Input)
}
