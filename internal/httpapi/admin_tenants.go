package httpapi

import (
	"net/http"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/queue"
	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/tenantlimits"
)

// tenantBody is a tenant as the admin API shows it. MaxInFlight 0 means
// unlimited.
type tenantBody struct {
	ID          string `json:"id"`
	MaxInFlight int    `json:"max_in_flight"`
	Weight      int    `json:"weight"`
	InFlight    int    `json:"in_flight"`
	// Paused and the rate limit on starts (null: none); see
	// docs/flow-control.md.
	Paused        bool `json:"paused"`
	RatePerSecond *int `json:"rate_per_second"`
	Burst         *int `json:"burst"`
}

type tenantsBody struct {
	Tenants []tenantBody `json:"tenants"`
}

func tenantOf(t *store.Tenant) tenantBody {
	return tenantBody{ID: t.ID, MaxInFlight: t.MaxInFlight, Weight: t.Weight, InFlight: t.InFlight}
}

func tenantsOf(ts []*store.Tenant) []tenantBody {
	out := make([]tenantBody, len(ts))
	for i, t := range ts {
		out[i] = tenantOf(t)
	}
	return out
}

// listTenants serves GET /v1/admin/tenants: every tenant, by ID, with its
// limits and in-flight count.
func (s *server) listTenants(w http.ResponseWriter, r *http.Request, _ dockettype.Principal) {
	if _, err := queryParams(r); err != nil {
		writeError(w, r, err)
		return
	}
	ts, err := s.adminStore.ListTenants(r.Context())
	if err != nil {
		writeError(w, r, s.adminStoreError(r.Context(), "list_tenants", err))
		return
	}
	_, rules, err := s.flowStats(r.Context())
	if err != nil {
		writeError(w, r, s.adminStoreError(r.Context(), "list_flow_rules", err))
		return
	}
	writeJSON(w, r, http.StatusOK, tenantsBody{Tenants: withFlow(tenantsOf(ts), rules)})
}

// patchTenant serves PATCH /v1/admin/tenants/{id}: only the fields given
// change; a missing tenant is created with the default limit.
func (s *server) patchTenant(w http.ResponseWriter, r *http.Request, _ dockettype.Principal) {
	if _, err := queryParams(r); err != nil {
		writeError(w, r, err)
		return
	}
	if err := checkJSONContentType(r); err != nil {
		writeError(w, r, err)
		return
	}
	body, err := s.readBody(w, r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	fields := map[string]bool{"max_in_flight": true, "weight": true}
	if s.flow != nil {
		fields["rate_per_second"], fields["burst"] = true, true
	}
	raw, err := decodeObject(body, fields, "the request body")
	if err != nil {
		writeError(w, r, err)
		return
	}
	change := &tenantlimits.Change{Now: s.clock.Now(), Tenant: r.PathValue("id"), DefaultMaxInFlight: s.tenantLimit}
	for name, dst := range map[string]**int{"max_in_flight": &change.MaxInFlight, "weight": &change.Weight} {
		if v, ok := raw[name]; ok {
			if *dst, err = decodeInt(name, v); err != nil {
				writeError(w, r, err)
				return
			}
		}
	}
	flow := &queue.FlowChange{Target: store.FlowTarget{Scope: store.ScopeTenant, Key: change.Tenant}}
	if err := rateChange(raw, flow); err != nil {
		writeError(w, r, err)
		return
	}
	if err := change.Validate(); err != nil {
		writeError(w, r, err)
		return
	}
	t, err := tenantlimits.Apply(r.Context(), s.adminStore, change)
	if err != nil {
		writeError(w, r, s.adminStoreError(r.Context(), "update_tenant", err))
		return
	}
	answer := tenantOf(t)
	if s.flow != nil {
		var rule *store.FlowRule
		_, rateGiven := raw["rate_per_second"]
		_, burstGiven := raw["burst"]
		if rateGiven || burstGiven {
			rule, err = s.flow.UpdateFlow(r.Context(), flow)
		} else {
			rule, err = s.flow.FlowRule(r.Context(), flow.Target)
		}
		if err != nil {
			writeError(w, r, s.adminStoreError(r.Context(), "update_flow_rule", err))
			return
		}
		answer = withFlow([]tenantBody{answer}, map[string]*store.FlowRule{t.ID: rule})[0]
	}
	writeJSON(w, r, http.StatusOK, answer)
}
