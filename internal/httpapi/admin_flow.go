package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/queue"
	"github.com/docket-dev/docket/internal/store"
)

// FlowAdmin pauses and limits pools, tenants and workflows (see
// docs/flow-control.md). *queue.Service satisfies it.
type FlowAdmin interface {
	Pause(ctx context.Context, t store.FlowTarget, refuseSubmissions bool) ([]store.Pause, error)
	Resume(ctx context.Context, t store.FlowTarget) ([]store.Pause, error)
	UpdateFlow(ctx context.Context, c *queue.FlowChange) (*store.FlowRule, error)
	FlowRule(ctx context.Context, t store.FlowTarget) (*store.FlowRule, error)
	FlowRules(ctx context.Context) ([]*store.FlowRule, error)
}

// flowRoutes are the admin routes of flow control.
func (s *server) flowRoutes() []route {
	if s.flow == nil {
		return nil
	}
	return []route{
		{http.MethodPost, "/v1/admin/pause", s.admin(s.pauseHandler(true))},
		{http.MethodPost, "/v1/admin/resume", s.admin(s.pauseHandler(false))},
		{http.MethodPatch, "/v1/admin/workflows/{name}", s.admin(s.patchWorkflow)},
	}
}

// pausedBody is the answer of pause and resume: everything paused, each
// as {"pool": …}, {"tenant": …} or {"workflow": …}, with
// "refuse_submissions": true when its pause refuses them.
type pausedBody struct {
	Paused []map[string]any `json:"paused"`
}

func pausedOf(ps []store.Pause) pausedBody {
	out := pausedBody{Paused: make([]map[string]any, len(ps))}
	for i, p := range ps {
		out.Paused[i] = map[string]any{p.Scope: p.Key}
		if p.RefuseSubmissions {
			out.Paused[i]["refuse_submissions"] = true
		}
	}
	return out
}

var (
	resumeFields = map[string]bool{"pool": true, "tenant": true, "workflow": true}
	pauseFields  = map[string]bool{"pool": true, "tenant": true, "workflow": true, "refuse_submissions": true}
)

// pauseHandler serves POST /v1/admin/pause and /v1/admin/resume: the body
// names exactly one pool, tenant or workflow; a pause may also say
// "refuse_submissions" (a boolean, false if absent).
func (s *server) pauseHandler(paused bool) principalHandler {
	fields := resumeFields
	if paused {
		fields = pauseFields
	}
	return func(w http.ResponseWriter, r *http.Request, _ dockettype.Principal) {
		raw, _, err := s.objectBody(w, r, fields, s.maxBody)
		if err != nil {
			writeError(w, r, err)
			return
		}
		var refuse bool
		if v, ok := raw["refuse_submissions"]; ok {
			if json.Unmarshal(v, &refuse) != nil || bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
				writeError(w, r, invalidRequest(`"refuse_submissions" must be true or false`))
				return
			}
			delete(raw, "refuse_submissions")
		}
		if len(raw) != 1 {
			writeError(w, r, invalidRequest(`name exactly one of "pool", "tenant" or "workflow"`))
			return
		}
		var t store.FlowTarget
		for scope, v := range raw {
			t.Scope = scope
			if json.Unmarshal(v, &t.Key) != nil || t.Key == "" {
				writeError(w, r, invalidRequest(`"`+scope+`" must be a non-empty string`))
				return
			}
		}
		var out []store.Pause
		if paused {
			out, err = s.flow.Pause(r.Context(), t, refuse)
		} else {
			out, err = s.flow.Resume(r.Context(), t)
		}
		if err != nil {
			writeError(w, r, s.adminStoreError(r.Context(), "set_paused", err))
			return
		}
		action := "resumed"
		if paused {
			action = "paused"
		}
		s.log.InfoContext(r.Context(), "flow "+action, "scope", t.Scope, "refuse_submissions", refuse)
		writeJSON(w, r, http.StatusOK, pausedOf(out))
	}
}

// optionalInt decodes a member that may be null (clear) or an integer.
func optionalInt(raw map[string]json.RawMessage, name string) (v *int, clear bool, err error) {
	m, ok := raw[name]
	if !ok {
		return nil, false, nil
	}
	if bytes.Equal(bytes.TrimSpace(m), []byte("null")) {
		return nil, true, nil
	}
	v, err = decodeInt(name, m)
	return v, false, err
}

// rateChange reads rate_per_second and burst into c.
func rateChange(raw map[string]json.RawMessage, c *queue.FlowChange) error {
	var err error
	if c.RatePerSecond, c.ClearRate, err = optionalInt(raw, "rate_per_second"); err != nil {
		return err
	}
	c.Burst, c.ClearBurst, err = optionalInt(raw, "burst")
	return err
}

// workflowFlowBody is a workflow's flow control, as PATCH answers it.
type workflowFlowBody struct {
	Name              string `json:"name"`
	Paused            bool   `json:"paused"`
	RefuseSubmissions bool   `json:"refuse_submissions"`
	RatePerSecond     *int   `json:"rate_per_second"`
	Burst             *int   `json:"burst"`
	ConcurrencyPerKey int    `json:"concurrency_per_key"`
}

func workflowFlowOf(r *store.FlowRule) workflowFlowBody {
	b := workflowFlowBody{Name: r.Key, Paused: r.Paused, RefuseSubmissions: r.RefuseSubmissions,
		ConcurrencyPerKey: max(r.ConcurrencyPerKey, 1)}
	b.RatePerSecond, b.Burst = rateOf(r)
	return b
}

// rateOf is a rule's rate limit as the API shows it: null when none.
func rateOf(r *store.FlowRule) (rate, burst *int) {
	if r == nil || r.RatePerSecond == 0 {
		return nil, nil
	}
	rt, b := r.RatePerSecond, r.Burst
	return &rt, &b
}

var workflowFlowFields = map[string]bool{"rate_per_second": true, "burst": true, "concurrency_per_key": true}

// patchWorkflow serves PATCH /v1/admin/workflows/{name}: the rate limit
// and concurrency per key of a built-in or remote workflow.
func (s *server) patchWorkflow(w http.ResponseWriter, r *http.Request, _ dockettype.Principal) {
	raw, _, err := s.objectBody(w, r, workflowFlowFields, s.maxBody)
	if err != nil {
		writeError(w, r, err)
		return
	}
	c := &queue.FlowChange{Target: store.FlowTarget{Scope: store.ScopeWorkflow, Key: r.PathValue("name")}}
	if err := rateChange(raw, c); err != nil {
		writeError(w, r, err)
		return
	}
	if c.ConcurrencyPerKey, c.ClearConcurrencyPerKey, err = optionalInt(raw, "concurrency_per_key"); err != nil {
		writeError(w, r, err)
		return
	}
	rule, err := s.flow.UpdateFlow(r.Context(), c)
	if err != nil {
		writeError(w, r, s.adminStoreError(r.Context(), "update_flow_rule", err))
		return
	}
	writeJSON(w, r, http.StatusOK, workflowFlowOf(rule))
}

// flowStatsBody is the flow control part of GET /v1/admin/stats.
type flowStatsBody struct {
	Paused    []map[string]any   `json:"paused"`
	Workflows []workflowFlowBody `json:"workflows"`
}

// flowStats reads the rules for the stats answer and the tenants' fields.
func (s *server) flowStats(ctx context.Context) (*flowStatsBody, map[string]*store.FlowRule, error) {
	out := &flowStatsBody{Paused: []map[string]any{}, Workflows: []workflowFlowBody{}}
	tenants := map[string]*store.FlowRule{}
	if s.flow == nil {
		return out, tenants, nil
	}
	rules, err := s.flow.FlowRules(ctx)
	if err != nil {
		return nil, nil, err
	}
	var paused []store.Pause
	for _, r := range rules {
		if r.Paused {
			paused = append(paused, store.Pause{FlowTarget: r.FlowTarget, RefuseSubmissions: r.RefuseSubmissions})
		}
		switch r.Scope {
		case store.ScopeWorkflow:
			out.Workflows = append(out.Workflows, workflowFlowOf(r))
		case store.ScopeTenant:
			tenants[r.Key] = r
		}
	}
	out.Paused = append(out.Paused, pausedOf(paused).Paused...)
	return out, tenants, nil
}

// withFlow adds the tenants' pauses and rate limits to their bodies.
func withFlow(ts []tenantBody, rules map[string]*store.FlowRule) []tenantBody {
	for i := range ts {
		if r := rules[ts[i].ID]; r != nil {
			ts[i].Paused, ts[i].RefuseSubmissions = r.Paused, r.RefuseSubmissions
			ts[i].RatePerSecond, ts[i].Burst = rateOf(r)
		}
	}
	return ts
}
