package httpapi

import (
	"errors"
	"net/http"
	"strings"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/auth"
)

// principalHandler serves a request of an authenticated principal.
type principalHandler func(w http.ResponseWriter, r *http.Request, p dockettype.Principal)

// authenticated resolves the request's bearer key before h runs. A missing
// or unknown key is 401; a key store that cannot answer is 503. A worker
// key is 403 here: it can call the worker API only.
func (s *server) authenticated(h principalHandler) http.HandlerFunc {
	return s.withKey(func(w http.ResponseWriter, r *http.Request, p dockettype.Principal) {
		if p.Role == dockettype.RoleWorker {
			writeError(w, r, dockettype.NewError(dockettype.CodeForbidden, "a worker key can call only /v1/worker/*"))
			return
		}
		h(w, r, p)
	})
}

// workerKey resolves the key like authenticated and refuses every key
// whose role is not worker: member and admin keys cannot claim.
func (s *server) workerKey(h principalHandler) http.HandlerFunc {
	return s.withKey(func(w http.ResponseWriter, r *http.Request, p dockettype.Principal) {
		if p.Role != dockettype.RoleWorker {
			writeError(w, r, dockettype.NewError(dockettype.CodeForbidden, "this call needs a worker key (role worker)"))
			return
		}
		h(w, r, p)
	})
}

// withKey resolves the request's bearer key before h runs, whatever its
// role.
func (s *server) withKey(h principalHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		key, ok := bearerKey(r.Header.Values("Authorization"))
		if !ok {
			writeError(w, r, dockettype.NewError(dockettype.CodeUnauthenticated, "missing or malformed Authorization header; send Authorization: Bearer <api key>"))
			return
		}
		p, err := s.authn.Authenticate(r.Context(), key)
		switch {
		case err == nil && p.Tenant != "" && p.Name != "":
		case err == nil, errors.Is(err, auth.ErrUnauthenticated), dockettype.CodeOf(err) == dockettype.CodeUnauthenticated:
			writeError(w, r, dockettype.NewError(dockettype.CodeUnauthenticated, "unknown or revoked API key"))
			return
		case clientGone(r):
			writeClientGone(w, r)
			return
		default:
			// The key store could not answer (503, or 429 when busy). Its
			// error text stays here.
			writeError(w, r, s.adminStoreError(r.Context(), "lookup_api_key", err))
			return
		}
		if info := infoFrom(r.Context()); info != nil {
			info.tenant = p.Tenant
		}
		h(w, r, p)
	}
}

// bearerKey returns the key of a single "Authorization: Bearer <key>"
// header. The scheme is case-insensitive (RFC 9110).
func bearerKey(values []string) (string, bool) {
	if len(values) != 1 {
		return "", false
	}
	scheme, key, ok := strings.Cut(strings.TrimSpace(values[0]), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	key = strings.TrimSpace(key)
	return key, key != ""
}
