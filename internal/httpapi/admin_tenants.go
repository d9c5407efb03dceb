package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/queue"
	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/tenantlimits"
)

// tenantBody is a tenant as the admin API shows it. MaxInFlight and
// StorageQuotaBytes 0 mean unlimited.
type tenantBody struct {
	ID          string `json:"id"`
	MaxInFlight int    `json:"max_in_flight"`
	Weight      int    `json:"weight"`
	InFlight    int    `json:"in_flight"`
	// StorageQuotaBytes is the quota that applies: the tenant's own, or
	// the server's default (StorageQuotaDefault).
	StorageQuotaBytes   int64 `json:"storage_quota_bytes"`
	StorageQuotaDefault bool  `json:"storage_quota_default"`
	StorageBytes        int64 `json:"storage_bytes"`
	// Paused (and whether the pause refuses submissions) and the rate
	// limit on starts (null: none); see docs/flow-control.md.
	Paused            bool `json:"paused"`
	RefuseSubmissions bool `json:"refuse_submissions"`
	RatePerSecond     *int `json:"rate_per_second"`
	Burst             *int `json:"burst"`
}

type tenantsBody struct {
	Tenants []tenantBody `json:"tenants"`
}

// tenantOf shows t; defaultQuota is the server's storage quota (0:
// unlimited), which applies when t has none of its own.
func tenantOf(t *store.Tenant, defaultQuota int64) tenantBody {
	b := tenantBody{ID: t.ID, MaxInFlight: t.MaxInFlight, Weight: t.Weight, InFlight: t.InFlight,
		StorageQuotaBytes: defaultQuota, StorageQuotaDefault: true, StorageBytes: t.StoredBytes}
	if t.StorageQuota != nil {
		b.StorageQuotaBytes, b.StorageQuotaDefault = *t.StorageQuota, false
	}
	return b
}

func tenantsOf(ts []*store.Tenant, defaultQuota int64) []tenantBody {
	out := make([]tenantBody, len(ts))
	for i, t := range ts {
		out[i] = tenantOf(t, defaultQuota)
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
	writeJSON(w, r, http.StatusOK, tenantsBody{Tenants: withFlow(tenantsOf(ts, s.storageQuota), rules)})
}

// patchTenant serves PATCH /v1/admin/tenants/{id}: only the fields given
// change; a missing tenant is created with the default limit.
func (s *server) patchTenant(w http.ResponseWriter, r *http.Request, _ dockettype.Principal) {
	fields := map[string]bool{"max_in_flight": true, "weight": true, "storage_quota_bytes": true}
	if s.flow != nil {
		fields["rate_per_second"], fields["burst"] = true, true
	}
	raw, _, err := s.objectBody(w, r, fields, s.maxBody)
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
	if v, ok := raw["storage_quota_bytes"]; ok {
		if change.StorageQuota, err = decodeStorageQuota(v); err != nil {
			writeError(w, r, err)
			return
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
	answer := tenantOf(t, s.storageQuota)
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

// decodeStorageQuota reads storage_quota_bytes: a byte count (0:
// unlimited), or null for the server's default.
func decodeStorageQuota(v json.RawMessage) (*int64, error) {
	if string(v) == "null" {
		q := store.NoStorageQuota
		return &q, nil
	}
	var n int64
	if err := json.Unmarshal(v, &n); err != nil || n < 0 {
		return nil, invalidRequest("storage_quota_bytes must be an integer >= 0 (0: unlimited), or null for the server's default")
	}
	return &n, nil
}
