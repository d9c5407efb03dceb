package workflow

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"

	"github.com/docket-dev/docket/dockettype"
)

// Func is a workflow entry point. It returns the task's JSON result, or an
// error: a *dockettype.Failure (see Fail) chooses the failure code and
// whether to retry; any other error is a retryable workflow_error. The
// context is cancelled when the task is cancelled, times out, or loses its
// lease; a Func should return promptly then.
type Func func(ctx context.Context, b *Binding, input json.RawMessage) (json.RawMessage, error)

// Definition describes a registered workflow.
type Definition struct {
	// Pool is the default pool; a submission may name another.
	Pool dockettype.Pool
	// Run is the trusted entry point.
	Run Func
}

// Registry maps workflow names to definitions. It is safe for concurrent
// use. Register everything before the server starts.
type Registry struct {
	mu   sync.RWMutex
	defs map[string]Definition
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{defs: make(map[string]Definition)} }

// Register adds a workflow. Names are lowercase dotted identifiers
// ("demo.echo"), at most 128 bytes; a name can be registered once.
func (r *Registry) Register(name string, def Definition) error {
	if !dockettype.ValidWorkflowName(name) {
		return fmt.Errorf("workflow: invalid name %q", name)
	}
	if !def.Pool.Valid() {
		return fmt.Errorf("workflow %s: invalid pool %q", name, def.Pool)
	}
	if def.Run == nil {
		return fmt.Errorf("workflow %s: Run is nil", name)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.defs[name]; ok {
		return fmt.Errorf("workflow %s: already registered", name)
	}
	r.defs[name] = def
	return nil
}

// Lookup returns the definition registered under name.
func (r *Registry) Lookup(name string) (Definition, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	d, ok := r.defs[name]
	return d, ok
}

// Names returns the registered names, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.defs))
	for n := range r.defs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Fail returns an error that ends the attempt with code and message. A
// retryable failure is re-queued with backoff while attempts remain.
//
// The message says why in a few words (`input needs a "text" string`): the
// task's own tenant reads it in the task's error.message, and it is never
// logged. Do not quote the input in it. Docket keeps its first 200 bytes.
func Fail(code dockettype.Code, message string, retryable bool) error {
	return &dockettype.Failure{Code: code, Message: message, Retryable: retryable}
}
