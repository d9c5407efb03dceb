package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/auth"
	"github.com/docket-dev/docket/internal/store"
)

// keyBody is an API key as the admin API lists it: never the key, never
// its hash.
type keyBody struct {
	ID         string          `json:"id"`
	Tenant     string          `json:"tenant"`
	Principal  string          `json:"principal"`
	Role       dockettype.Role `json:"role"`
	AllTenants bool            `json:"all_tenants"`
	CreatedAt  time.Time       `json:"created_at"`
	RevokedAt  *time.Time      `json:"revoked_at"`
}

// createdKeyBody is the answer of POST /v1/admin/keys: the only time the
// key itself is shown.
type createdKeyBody struct {
	ID         string          `json:"id"`
	Key        string          `json:"key"`
	Tenant     string          `json:"tenant"`
	Principal  string          `json:"principal"`
	Role       dockettype.Role `json:"role"`
	AllTenants bool            `json:"all_tenants"`
	CreatedAt  time.Time       `json:"created_at"`
}

type keysBody struct {
	Keys []keyBody `json:"keys"`
}

func keyOf(k *store.APIKey) keyBody {
	return keyBody{ID: k.ID, Tenant: k.Tenant, Principal: k.Principal, Role: k.Role, AllTenants: k.AllTenants,
		CreatedAt: k.CreatedAt, RevokedAt: k.RevokedAt}
}

// keyFields are the members of a POST /v1/admin/keys body.
var keyFields = map[string]bool{"tenant": true, "principal": true, "role": true, "all_tenants": true}

// createKey serves POST /v1/admin/keys: a new key for (tenant, principal,
// role), the tenant created with the default limit when missing. The key
// is in this answer and nowhere else.
func (s *server) createKey(w http.ResponseWriter, r *http.Request, _ dockettype.Principal) {
	raw, _, err := s.objectBody(w, r, keyFields, s.maxBody)
	if err != nil {
		writeError(w, r, err)
		return
	}
	tenant, principal, role := "", "", string(dockettype.RoleMember)
	for name, dst := range map[string]*string{"tenant": &tenant, "principal": &principal, "role": &role} {
		if v, ok := raw[name]; ok {
			if *dst, err = decodeString(name, v); err != nil {
				writeError(w, r, err)
				return
			}
		}
	}
	var allTenants bool
	if v, ok := raw["all_tenants"]; ok {
		if err := json.Unmarshal(v, &allTenants); err != nil {
			writeError(w, r, invalidRequest(`"all_tenants" must be true or false`))
			return
		}
	}
	switch {
	case !auth.ValidName(tenant):
		err = invalidRequest(`"tenant" is required: 1-64 characters of [A-Za-z0-9._@-]`)
	case !auth.ValidName(principal):
		err = invalidRequest(`"principal" is required: 1-64 characters of [A-Za-z0-9._@-]`)
	case !dockettype.Role(role).Valid():
		err = invalidRequest(`"role" must be "member", "admin" or "worker"`)
	case allTenants && role != string(dockettype.RoleWorker):
		err = invalidRequest(`"all_tenants" is for worker keys only`)
	}
	if err != nil {
		writeError(w, r, err)
		return
	}
	ctx := r.Context()
	now := s.clock.Now()
	if _, err := s.adminStore.EnsureTenant(ctx, &store.EnsureTenantParams{Now: now, ID: tenant, DefaultMaxInFlight: s.tenantLimit}); err != nil {
		writeError(w, r, s.adminStoreError(ctx, "ensure_tenant", err))
		return
	}
	var (
		key string
		k   *store.APIKey
	)
	if role == string(dockettype.RoleWorker) {
		key, k, err = auth.CreateWorkerKey(ctx, s.adminStore, now, tenant, principal, allTenants)
	} else {
		key, k, err = auth.CreateKey(ctx, s.adminStore, now, tenant, principal, dockettype.Role(role))
	}
	if err != nil {
		writeError(w, r, s.adminStoreError(ctx, "create_api_key", err))
		return
	}
	s.log.InfoContext(ctx, "api key created", "key_id", k.ID, "tenant", k.Tenant, "role", k.Role)
	writeJSON(w, r, http.StatusCreated, createdKeyBody{
		ID: k.ID, Key: key, Tenant: k.Tenant, Principal: k.Principal, Role: k.Role, AllTenants: k.AllTenants, CreatedAt: k.CreatedAt,
	})
}

// listKeys serves GET /v1/admin/keys[?tenant=T]: the keys (of one tenant,
// or all), oldest first, revoked ones included.
func (s *server) listKeys(w http.ResponseWriter, r *http.Request, _ dockettype.Principal) {
	q, err := queryParams(r, "tenant")
	if err != nil {
		writeError(w, r, err)
		return
	}
	tenant, ok := q["tenant"]
	if ok && !auth.ValidName(tenant) {
		writeError(w, r, invalidRequest("tenant must be 1-64 characters of [A-Za-z0-9._@-]"))
		return
	}
	keys, err := s.adminStore.ListAPIKeys(r.Context(), tenant)
	if err != nil {
		writeError(w, r, s.adminStoreError(r.Context(), "list_api_keys", err))
		return
	}
	out := keysBody{Keys: make([]keyBody, len(keys))}
	for i, k := range keys {
		out.Keys[i] = keyOf(k)
	}
	writeJSON(w, r, http.StatusOK, out)
}

// keyForgetter is an Authenticator that caches the keys it resolved
// (*auth.Authenticator.WithCache): revoking a key drops it from this node's
// cache at once; other nodes drop it when their cache entry expires.
type keyForgetter interface {
	Forget(keyID string)
}

// revokeKey serves POST /v1/admin/keys/{id}/revoke: the key with its
// revoked_at (revoking again changes nothing). From this answer on, this
// node refuses the key.
func (s *server) revokeKey(w http.ResponseWriter, r *http.Request, _ dockettype.Principal) {
	if _, err := queryParams(r); err != nil {
		writeError(w, r, err)
		return
	}
	notFound := dockettype.NewError(dockettype.CodeNotFound, "no such key")
	id := r.PathValue("id")
	if !plausibleID(id) {
		writeError(w, r, notFound)
		return
	}
	k, err := s.adminStore.RevokeAPIKey(r.Context(), &store.RevokeAPIKeyParams{Now: s.clock.Now(), ID: id})
	switch {
	case errors.Is(err, store.ErrNotFound):
		writeError(w, r, notFound)
		return
	case err != nil:
		writeError(w, r, s.adminStoreError(r.Context(), "revoke_api_key", err))
		return
	}
	if f, ok := s.authn.(keyForgetter); ok {
		f.Forget(k.ID)
	}
	s.log.InfoContext(r.Context(), "api key revoked", "key_id", k.ID, "tenant", k.Tenant, "role", k.Role)
	writeJSON(w, r, http.StatusOK, keyOf(k))
}

// decodeString decodes a string member (null is not a string).
func decodeString(name string, v json.RawMessage) (string, error) {
	var str string
	if bytes.Equal(bytes.TrimSpace(v), []byte("null")) || json.Unmarshal(v, &str) != nil {
		return "", invalidRequest(fmt.Sprintf("%s must be a string", name))
	}
	return str, nil
}
