// Package remote is the runtime of remote workflows: trusted entry points
// an admin registers by name (PUT /v1/admin/workflows/{name}) and remote
// workers run over the worker API (docs/worker-protocol.md).
//
// Runtime wraps the runtime of the workflows compiled into the server: a
// name is built in or remote, never both. Resolving a remote name tells
// admission to queue the task in the workflow's own queue, which only
// remote workers claim; the queue itself stays the same queue (admission,
// fairness, leases, fencing and history).
package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/queue"
	"github.com/docket-dev/docket/internal/store"
)

// Builtin is the runtime of the workflows compiled into the server, and
// the names it serves.
type Builtin interface {
	queue.Runtime
	Names() []string
	Pool(name string) (dockettype.Pool, bool)
}

// ConfigSource says which configuration version new tasks pin.
type ConfigSource interface {
	CurrentVersion(ctx context.Context) (string, error)
}

// Store is where remote workflows are registered.
type Store interface {
	PutWorkflow(ctx context.Context, params *store.PutWorkflowParams) (*store.Workflow, bool, error)
	GetWorkflow(ctx context.Context, name string) (*store.Workflow, error)
	ListWorkflows(ctx context.Context) ([]*store.Workflow, error)
	DeleteWorkflow(ctx context.Context, name string) error
}

// CacheTTL is how long a node trusts what it read of a workflow's
// registration: one registered, changed or removed on another node is seen
// here within it (on this node at once).
const CacheTTL = 2 * time.Second

// Runtime resolves built-in names first, then registered remote ones.
type Runtime struct {
	builtin Builtin
	store   Store
	config  ConfigSource // nil: tasks pin no configuration version
	clock   clockwork.Clock

	mu    sync.Mutex
	cache map[string]cached
}

type cached struct {
	wf *store.Workflow // nil: not registered
	at time.Time
}

var _ queue.Runtime = (*Runtime)(nil)

// New returns the runtime over builtin and the registrations in st.
func New(builtin Builtin, st Store, config ConfigSource, clock clockwork.Clock) *Runtime {
	return &Runtime{builtin: builtin, store: st, config: config, clock: clock, cache: map[string]cached{}}
}

// Resolve answers for a built-in name as the built-in runtime does, and
// for a registered remote one with its pool and defaults.
func (r *Runtime) Resolve(ctx context.Context, name string) (queue.Resolution, error) {
	res, err := r.builtin.Resolve(ctx, name)
	if err == nil || !isUnknown(err) {
		return res, err
	}
	wf, lerr := r.lookup(ctx, name)
	if lerr != nil {
		return queue.Resolution{}, fmt.Errorf("resolve remote workflow: %w", lerr)
	}
	if wf == nil {
		return queue.Resolution{}, err
	}
	res = queue.Resolution{Pool: wf.Pool, Remote: true, DefaultMaxAttempts: wf.MaxAttempts,
		DefaultTimeout: time.Duration(wf.TimeoutMS) * time.Millisecond}
	if r.config != nil {
		if res.ConfigVersion, err = r.config.CurrentVersion(ctx); err != nil {
			return queue.Resolution{}, fmt.Errorf("resolve configuration version: %w", err)
		}
	}
	return res, nil
}

// Run invokes a built-in workflow. The node's pools never claim a remote
// workflow's tasks, so a remote name never reaches it.
func (r *Runtime) Run(ctx context.Context, inv *queue.Invocation) (json.RawMessage, error) {
	return r.builtin.Run(ctx, inv)
}

func isUnknown(err error) bool {
	var de *dockettype.Error
	return errors.As(err, &de) && de.Code == dockettype.CodeUnknownWorkflow
}

// lookup reads a registration through the cache; nil when none.
func (r *Runtime) lookup(ctx context.Context, name string) (*store.Workflow, error) {
	now := r.clock.Now()
	r.mu.Lock()
	c, ok := r.cache[name]
	r.mu.Unlock()
	if ok && now.Sub(c.at) < CacheTTL {
		return c.wf, nil
	}
	wf, err := r.store.GetWorkflow(ctx, name)
	switch {
	case errors.Is(err, store.ErrNotFound):
		wf = nil
	case err != nil:
		return nil, err
	}
	r.mu.Lock()
	if len(r.cache) > 10_000 { // names are probed by clients: bound the memory
		clear(r.cache)
	}
	r.cache[name] = cached{wf: wf, at: now}
	r.mu.Unlock()
	return wf, nil
}

func (r *Runtime) forget(name string) {
	r.mu.Lock()
	delete(r.cache, name)
	r.mu.Unlock()
}

// Workflow is a workflow as the admin API lists it.
type Workflow struct {
	Name        string          `json:"name"`
	Pool        dockettype.Pool `json:"pool"`
	TimeoutMS   int64           `json:"timeout_ms"`
	MaxAttempts int             `json:"max_attempts"`
	Remote      bool            `json:"remote"`
}

// Registration is what an admin registers.
type Registration struct {
	Name        string
	Pool        dockettype.Pool
	TimeoutMS   int64 // 0: the server's default
	MaxAttempts int   // 0: the server's default
}

// Errors of the registry, for the admin API.
var (
	ErrBuiltin     = errors.New("remote: the name is a built-in workflow")
	ErrInvalidName = errors.New("remote: invalid workflow name")
)

// Register creates or replaces a remote workflow and reports whether it
// created it.
func (r *Runtime) Register(ctx context.Context, now time.Time, reg Registration) (*Workflow, bool, error) {
	if !dockettype.ValidWorkflowName(reg.Name) {
		return nil, false, ErrInvalidName
	}
	if _, ok := r.builtin.Pool(reg.Name); ok {
		return nil, false, ErrBuiltin
	}
	wf, created, err := r.store.PutWorkflow(ctx, &store.PutWorkflowParams{Now: now, Name: reg.Name, Pool: reg.Pool,
		TimeoutMS: reg.TimeoutMS, MaxAttempts: reg.MaxAttempts})
	if err != nil {
		return nil, false, err
	}
	r.forget(reg.Name)
	return remoteView(wf), created, nil
}

// Remove deletes a remote workflow: new submissions of it are refused.
// store.ErrNotFound when there is none; ErrBuiltin for a built-in name.
func (r *Runtime) Remove(ctx context.Context, name string) error {
	if _, ok := r.builtin.Pool(name); ok {
		return ErrBuiltin
	}
	if err := r.store.DeleteWorkflow(ctx, name); err != nil {
		return err
	}
	r.forget(name)
	return nil
}

// List returns every workflow: built-in ones, then remote ones, each by name.
func (r *Runtime) List(ctx context.Context) ([]*Workflow, error) {
	names := r.builtin.Names()
	sort.Strings(names)
	out := make([]*Workflow, 0, len(names))
	for _, n := range names {
		p, _ := r.builtin.Pool(n)
		out = append(out, &Workflow{Name: n, Pool: p})
	}
	remote, err := r.store.ListWorkflows(ctx)
	if err != nil {
		return nil, err
	}
	for _, wf := range remote {
		out = append(out, remoteView(wf))
	}
	return out, nil
}

func remoteView(wf *store.Workflow) *Workflow {
	return &Workflow{Name: wf.Name, Pool: wf.Pool, TimeoutMS: wf.TimeoutMS, MaxAttempts: wf.MaxAttempts, Remote: true}
}
