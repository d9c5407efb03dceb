package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/remote"
	"github.com/docket-dev/docket/internal/store"
)

// WorkflowAdmin registers remote workflows. *remote.Runtime satisfies it.
type WorkflowAdmin interface {
	Register(ctx context.Context, now time.Time, reg remote.Registration) (*remote.Workflow, bool, error)
	Remove(ctx context.Context, name string) error
	List(ctx context.Context) ([]*remote.Workflow, error)
}

type workflowsBody struct {
	Workflows []workflowListItem `json:"workflows"`
}

// workflowListItem is a workflow with its flow control (as PATCH
// /v1/admin/workflows/{name} sets it and answers).
type workflowListItem struct {
	*remote.Workflow
	Paused            bool `json:"paused"`
	RefuseSubmissions bool `json:"refuse_submissions"`
	RatePerSecond     *int `json:"rate_per_second"`
	Burst             *int `json:"burst"`
	ConcurrencyPerKey int  `json:"concurrency_per_key"`
}

// workflowRoutes are the admin routes of remote workflows and workers.
func (s *server) workflowRoutes() []route {
	if s.workflows == nil {
		return nil
	}
	return []route{
		{http.MethodGet, "/v1/admin/workflows", s.admin(s.listWorkflows)},
		{http.MethodPut, "/v1/admin/workflows/{name}", s.admin(s.putWorkflow)},
		{http.MethodDelete, "/v1/admin/workflows/{name}", s.admin(s.deleteWorkflow)},
		{http.MethodGet, "/v1/admin/workers", s.admin(s.listWorkers)},
	}
}

// listWorkflows serves GET /v1/admin/workflows: built-in workflows
// ("remote": false), then remote ones, each by name.
func (s *server) listWorkflows(w http.ResponseWriter, r *http.Request, _ dockettype.Principal) {
	if _, err := queryParams(r); err != nil {
		writeError(w, r, err)
		return
	}
	list, err := s.workflows.List(r.Context())
	if err != nil {
		writeError(w, r, s.adminStoreError(r.Context(), "list_workflows", err))
		return
	}
	rules := map[string]*store.FlowRule{}
	if s.flow != nil {
		all, err := s.flow.FlowRules(r.Context())
		if err != nil {
			writeError(w, r, s.adminStoreError(r.Context(), "list_workflows", err))
			return
		}
		for _, rule := range all {
			if rule.Scope == store.ScopeWorkflow {
				rules[rule.Key] = rule
			}
		}
	}
	out := workflowsBody{Workflows: make([]workflowListItem, len(list))}
	for i, wf := range list {
		item := workflowListItem{Workflow: wf, ConcurrencyPerKey: 1}
		if rule := rules[wf.Name]; rule != nil {
			f := workflowFlowOf(rule)
			item.Paused, item.RefuseSubmissions = f.Paused, f.RefuseSubmissions
			item.RatePerSecond, item.Burst, item.ConcurrencyPerKey = f.RatePerSecond, f.Burst, f.ConcurrencyPerKey
		}
		out.Workflows[i] = item
	}
	writeJSON(w, r, http.StatusOK, out)
}

var workflowFields = map[string]bool{"pool": true, "timeout_ms": true, "max_attempts": true}

// putWorkflow serves PUT /v1/admin/workflows/{name}: registers (or
// replaces) a remote workflow. A built-in name is 409 builtin_workflow.
func (s *server) putWorkflow(w http.ResponseWriter, r *http.Request, _ dockettype.Principal) {
	raw, _, err := s.objectBody(w, r, workflowFields, s.maxBody)
	if err != nil {
		writeError(w, r, err)
		return
	}
	reg := remote.Registration{Name: r.PathValue("name")}
	if v, ok := raw["pool"]; ok {
		var p string
		if json.Unmarshal(v, &p) != nil {
			writeError(w, r, invalidRequest(`"pool" must be "online" or "offline"`))
			return
		}
		reg.Pool = dockettype.Pool(p)
	}
	if !reg.Pool.Valid() {
		writeError(w, r, invalidRequest(`"pool" is required: "online" or "offline"`))
		return
	}
	if v, ok := raw["timeout_ms"]; ok {
		if json.Unmarshal(v, &reg.TimeoutMS) != nil || reg.TimeoutMS < 0 || reg.TimeoutMS > s.maxTimeout.Milliseconds() {
			writeError(w, r, invalidRequest(fmt.Sprintf("timeout_ms must be between 0 and %d (0: the server's default)", s.maxTimeout.Milliseconds())))
			return
		}
	}
	if v, ok := raw["max_attempts"]; ok {
		n, err := decodeInt("max_attempts", v)
		if err != nil || *n < 0 || *n > 1000 {
			writeError(w, r, invalidRequest("max_attempts must be between 0 and 1000 (0: the server's default)"))
			return
		}
		reg.MaxAttempts = *n
	}
	wf, _, err := s.workflows.Register(r.Context(), s.clock.Now(), reg)
	switch {
	case errors.Is(err, remote.ErrInvalidName):
		writeError(w, r, invalidRequest("a workflow name is a lowercase dotted identifier (e.g. images.resize) of at most 128 bytes"))
		return
	case errors.Is(err, remote.ErrBuiltin):
		writeError(w, r, dockettype.NewError(dockettype.CodeBuiltinWorkflow, "this name is a workflow compiled into the server"))
		return
	case err != nil:
		writeError(w, r, s.adminStoreError(r.Context(), "put_workflow", err))
		return
	}
	s.log.InfoContext(r.Context(), "remote workflow registered", "workflow", wf.Name, "pool", wf.Pool)
	writeJSON(w, r, http.StatusOK, wf)
}

// deleteWorkflow serves DELETE /v1/admin/workflows/{name}: new submissions
// of it are then 400 unknown_workflow.
func (s *server) deleteWorkflow(w http.ResponseWriter, r *http.Request, _ dockettype.Principal) {
	if _, err := queryParams(r); err != nil {
		writeError(w, r, err)
		return
	}
	name := r.PathValue("name")
	err := s.workflows.Remove(r.Context(), name)
	switch {
	case errors.Is(err, remote.ErrBuiltin):
		writeError(w, r, dockettype.NewError(dockettype.CodeBuiltinWorkflow, "this name is a workflow compiled into the server"))
		return
	case errors.Is(err, store.ErrNotFound):
		writeError(w, r, dockettype.NewError(dockettype.CodeNotFound, "no such remote workflow"))
		return
	case err != nil:
		writeError(w, r, s.adminStoreError(r.Context(), "delete_workflow", err))
		return
	}
	s.log.InfoContext(r.Context(), "remote workflow removed", "workflow", name)
	writeJSON(w, r, http.StatusOK, map[string]string{"name": name})
}

// workerBody is a remote worker as GET /v1/admin/workers lists it.
type workerBody struct {
	ID         string    `json:"id"`
	KeyID      string    `json:"key_id"`
	Tenant     string    `json:"tenant"`
	AllTenants bool      `json:"all_tenants"`
	Workflows  []string  `json:"workflows"`
	Slots      int       `json:"slots"`
	Leases     int       `json:"leases"`
	SDK        string    `json:"sdk"`
	LastSeenAt time.Time `json:"last_seen_at"`
	// Connected: seen within the lease TTL.
	Connected bool `json:"connected"`
}

type workersBody struct {
	Workers []workerBody `json:"workers"`
}

// listedWorkersAge is how far back GET /v1/admin/workers looks.
const listedWorkersAge = 24 * time.Hour

// listWorkers serves GET /v1/admin/workers: the workers any node saw in
// the last day, most recently seen first.
func (s *server) listWorkers(w http.ResponseWriter, r *http.Request, _ dockettype.Principal) {
	if _, err := queryParams(r); err != nil {
		writeError(w, r, err)
		return
	}
	now := s.clock.Now()
	ws, err := s.adminStore.ListWorkers(r.Context(), now.Add(-listedWorkersAge))
	if err != nil {
		writeError(w, r, s.adminStoreError(r.Context(), "list_workers", err))
		return
	}
	out := workersBody{Workers: make([]workerBody, len(ws))}
	for i, wk := range ws {
		out.Workers[i] = workerBody{ID: wk.ID, KeyID: wk.KeyID, Tenant: wk.Tenant, AllTenants: wk.AllTenants,
			Workflows: wk.Workflows, Slots: wk.Slots, Leases: wk.Leases, SDK: wk.SDK, LastSeenAt: wk.LastSeenAt,
			Connected: now.Sub(wk.LastSeenAt) <= s.leaseTTL}
	}
	writeJSON(w, r, http.StatusOK, out)
}
