package httpapi

import (
	"context"
	"errors"
	"net/http"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/tenantlimits"
)

// adminPrefix starts every route of the admin API (role admin).
const adminPrefix = "/v1/admin/"

// TenantStore is what the admin API's tenant routes need from the store.
// *sqlite.Store and *postgres.Store satisfy it.
type TenantStore interface {
	tenantlimits.Store
}

// tenantBody is a tenant as the admin API shows it.
type tenantBody struct {
	ID          string `json:"id"`
	MaxInFlight int    `json:"max_in_flight"`
	Weight      int    `json:"weight"`
	InFlight    int    `json:"in_flight"`
}

// admin resolves the key like authenticated, then refuses every key whose
// role is not admin with 403 forbidden, whatever the admin route, method or
// path (a member learns nothing about which admin routes exist).
func (s *server) admin(h principalHandler) http.HandlerFunc {
	return s.authenticated(func(w http.ResponseWriter, r *http.Request, p dockettype.Principal) {
		if p.Role != dockettype.RoleAdmin {
			writeError(w, r, dockettype.NewError(dockettype.CodeForbidden, "this call needs an admin key"))
			return
		}
		h(w, r, p)
	})
}

// ignorePrincipal adapts a handler that does not need the principal.
func ignorePrincipal(h http.HandlerFunc) principalHandler {
	return func(w http.ResponseWriter, r *http.Request, _ dockettype.Principal) { h(w, r) }
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
	raw, err := decodeObject(body, map[string]bool{"max_in_flight": true, "weight": true}, "the request body")
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
	t, err := tenantlimits.Apply(r.Context(), s.tenants, change)
	if err != nil {
		writeError(w, r, s.adminStoreError(r.Context(), "admin_tenants", err))
		return
	}
	writeJSON(w, r, http.StatusOK, tenantBody{ID: t.ID, MaxInFlight: t.MaxInFlight, Weight: t.Weight, InFlight: t.InFlight})
}

// adminStoreError turns a store error of an admin call into an answer:
// a *dockettype.Error passes through, a refused parameter is internal, and
// anything else is store_unavailable, counted and logged by code only.
func (s *server) adminStoreError(ctx context.Context, op string, err error) error {
	var de *dockettype.Error
	switch {
	case errors.As(err, &de):
		return de
	case ctx.Err() != nil:
		return ctx.Err()
	}
	s.metrics.StoreErrors.WithLabelValues(op).Inc()
	if errors.Is(err, store.ErrInvalid) {
		s.log.ErrorContext(ctx, "store refused invalid params", "code", dockettype.CodeInternal, "op", op)
		return dockettype.NewError(dockettype.CodeInternal, internalMessage)
	}
	s.log.WarnContext(ctx, "store operation failed", "code", dockettype.CodeStoreUnavailable, "op", op)
	return dockettype.NewError(dockettype.CodeStoreUnavailable, "the store is unavailable; retry later")
}
