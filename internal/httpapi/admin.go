package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/auth"
	"github.com/docket-dev/docket/internal/queue"
	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/storefailure"
	"github.com/docket-dev/docket/internal/tenantlimits"
)

// adminPrefix starts every route of the admin API (role admin).
const adminPrefix = "/v1/admin/"

// AdminStore is what the admin API needs from the store: tenants, keys,
// the counts of GET /v1/admin/stats and …/stats/throughput and the
// published rule set versions.
// Every store.Store satisfies it.
type AdminStore interface {
	tenantlimits.Store
	auth.KeyStore
	ListTenants(ctx context.Context) ([]*store.Tenant, error)
	ListAPIKeys(ctx context.Context, tenant string) ([]*store.APIKey, error)
	RevokeAPIKey(ctx context.Context, params *store.RevokeAPIKeyParams) (*store.APIKey, error)
	Stats(ctx context.Context) (*store.Stats, error)
	Throughput(ctx context.Context, params *store.ThroughputParams) ([]store.ThroughputBucket, error)
	ListRuleSets(ctx context.Context) ([]*store.RuleSet, error)
	ListWorkers(ctx context.Context, since time.Time) ([]*store.Worker, error)
}

// NodeStats is what GET /v1/admin/stats reads of this node: its pools'
// workers, their capacity, and its schedulers. *queue.Service satisfies
// it.
type NodeStats interface {
	WorkerStats() []queue.WorkerStats
	SchedulerStats() []queue.SchedulerStats
	Config() queue.Config
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

// adminRoutes are the routes of the admin API that opts enable.
func (s *server) adminRoutes() []route {
	if s.adminStore == nil {
		return nil
	}
	routes := []route{
		{http.MethodGet, "/v1/admin/tenants", s.admin(s.listTenants)},
		{http.MethodPatch, "/v1/admin/tenants/{id}", s.admin(s.patchTenant)},
		{http.MethodPost, "/v1/admin/keys", s.admin(s.createKey)},
		{http.MethodGet, "/v1/admin/keys", s.admin(s.listKeys)},
		{http.MethodPost, "/v1/admin/keys/{id}/revoke", s.admin(s.revokeKey)},
		{http.MethodGet, "/v1/admin/rules", s.admin(s.listRuleSets)},
		{http.MethodGet, "/v1/admin/stats/throughput", s.admin(s.throughput)},
	}
	if s.node != nil {
		routes = append(routes, route{http.MethodGet, "/v1/admin/stats", s.admin(s.stats)})
	}
	routes = append(routes, s.scheduleRoutes()...)
	routes = append(routes, s.flowRoutes()...)
	return append(routes, s.workflowRoutes()...)
}

// storeBusyRetryAfter is the Retry-After of a request refused because every
// connection of the store was in use (too_many_requests).
const storeBusyRetryAfter = time.Second

// adminStoreError turns a store error of an admin call, made as the store
// operation op, into an answer (see storefailure.Reporter): a
// *dockettype.Error passes through, a busy store is too_many_requests, a
// refused parameter or a database error that is not an outage is internal,
// and anything else is store_unavailable. Each is counted and logged by
// code only.
func (s *server) adminStoreError(ctx context.Context, op string, err error) error {
	r := storefailure.Reporter{Log: s.log, Errors: s.metrics.StoreErrors, RetryAfter: storeBusyRetryAfter}
	return r.Error(ctx, op, err)
}
