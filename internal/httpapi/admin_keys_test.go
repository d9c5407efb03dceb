package httpapi_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/auth"
	"github.com/docket-dev/docket/internal/httpapi"
	"github.com/docket-dev/docket/internal/httpapi/httpapitest"
)

// createdKey is the answer of POST /v1/admin/keys.
type createdKey struct {
	ID        string          `json:"id"`
	Key       string          `json:"key"`
	Tenant    string          `json:"tenant"`
	Principal string          `json:"principal"`
	Role      dockettype.Role `json:"role"`
	CreatedAt time.Time       `json:"created_at"`
}

// listedKey is a key of GET /v1/admin/keys.
type listedKey struct {
	ID        string          `json:"id"`
	Tenant    string          `json:"tenant"`
	Principal string          `json:"principal"`
	Role      dockettype.Role `json:"role"`
	CreatedAt time.Time       `json:"created_at"`
	RevokedAt *time.Time      `json:"revoked_at"`
}

func createKey(t *testing.T, url, admin, body string) createdKey {
	t.Helper()
	r := call(t, url, request{method: http.MethodPost, path: "/v1/admin/keys", key: admin, body: body})
	r.wantStatus(t, http.StatusCreated)
	var k createdKey
	r.decode(t, &k)
	return k
}

func listKeys(t *testing.T, url, admin, query string) (keys []listedKey, body string) {
	t.Helper()
	r := call(t, url, request{method: http.MethodGet, path: "/v1/admin/keys" + query, key: admin})
	r.wantStatus(t, http.StatusOK)
	var out struct {
		Keys []listedKey `json:"keys"`
	}
	r.decode(t, &out)
	if out.Keys == nil {
		t.Fatalf("keys is not an array: %s", r.body)
	}
	var raw struct {
		Keys []map[string]any `json:"keys"`
	}
	r.decode(t, &raw)
	for _, k := range raw.Keys {
		var fields []string
		for f := range k {
			fields = append(fields, f)
		}
		slices.Sort(fields)
		if want := []string{"all_tenants", "created_at", "id", "principal", "revoked_at", "role", "tenant"}; !slices.Equal(fields, want) {
			t.Fatalf("a listed key has fields %v, want exactly %v", fields, want)
		}
	}
	return out.Keys, string(r.body)
}

// Admin keys create, list and revoke keys: the key is shown once, a
// listing never carries a key or its hash, and a revoked key is refused
// at once by the node that revoked it.
func TestAdminKeys(t *testing.T) {
	t.Parallel()
	httpapitest.ForEachDatabase(t, func(t *testing.T, db httpapitest.Database) {
		t.Parallel()
		s := httpapitest.New(t, httpapitest.Options{Store: db.Open(t), Queue: queuedOnly, API: httpapi.Options{DefaultTenantLimit: 50}})
		admin := s.NewAdminKeyFor(t, "ops", "root")

		bob := createKey(t, s.URL, admin, `{"tenant":"beta","principal":"bob"}`)
		if bob.ID == "" || !strings.HasPrefix(bob.Key, auth.KeyPrefix) || bob.Tenant != "beta" || bob.Principal != "bob" ||
			bob.Role != dockettype.RoleMember || bob.CreatedAt.IsZero() {
			t.Fatalf("created key = %+v, want a member key of beta/bob", bob)
		}
		if tn, err := s.Store.GetTenant(context.Background(), "beta"); err != nil || tn.MaxInFlight != 50 {
			t.Fatalf("tenant created with the key = %+v, %v; want the default limit 50", tn, err)
		}
		// The key is beta's: its tasks are beta's, authored by bob, and
		// acme's tasks are not found.
		acmeTask := mustSubmit(t, s.URL, s.Key, "k", echoBody)
		task := mustSubmit(t, s.URL, bob.Key, "k", echoBody)
		if task.Tenant != "beta" || task.Author != "bob" {
			t.Fatalf("task of the new key: tenant %q author %q", task.Tenant, task.Author)
		}
		call(t, s.URL, request{method: http.MethodGet, path: "/v1/tasks/" + acmeTask.ID, key: bob.Key}).
			wantError(t, http.StatusNotFound, dockettype.CodeNotFound)
		call(t, s.URL, request{method: http.MethodGet, path: "/v1/admin/tenants", key: bob.Key}).
			wantError(t, http.StatusForbidden, dockettype.CodeForbidden)
		carol := createKey(t, s.URL, admin, `{"tenant":"beta","principal":"carol","role":"admin"}`)
		if carol.Role != dockettype.RoleAdmin {
			t.Fatalf("role = %q, want admin", carol.Role)
		}
		call(t, s.URL, request{method: http.MethodGet, path: "/v1/admin/tenants", key: carol.Key}).wantStatus(t, http.StatusOK)

		// Listings carry neither keys nor hashes.
		all, body := listKeys(t, s.URL, admin, "")
		for _, secret := range []string{bob.Key, carol.Key, admin, s.Key} {
			if strings.Contains(body, secret) || strings.Contains(body, auth.HashKey(secret)) {
				t.Fatalf("GET /v1/admin/keys shows a key or its hash: %s", body)
			}
		}
		var owners []string
		for _, k := range all {
			owners = append(owners, k.Tenant+"/"+k.Principal)
		}
		slices.Sort(owners)
		if want := []string{"acme/alice", "beta/bob", "beta/carol", "ops/root"}; !slices.Equal(owners, want) {
			t.Fatalf("all keys = %v, want %v", owners, want)
		}
		beta, _ := listKeys(t, s.URL, admin, "?tenant=beta")
		if len(beta) != 2 || beta[0].ID != bob.ID || beta[1].ID != carol.ID || beta[0].RevokedAt != nil {
			t.Fatalf("beta's keys = %+v, want bob's then carol's, not revoked", beta)
		}
		if none, _ := listKeys(t, s.URL, admin, "?tenant=nobody"); len(none) != 0 {
			t.Fatalf("keys of a tenant without any = %+v", none)
		}

		// Revoked: refused at once, listed with revoked_at; revoking again
		// changes nothing.
		revoke := func(id string) response {
			return call(t, s.URL, request{method: http.MethodPost, path: "/v1/admin/keys/" + id + "/revoke", key: admin})
		}
		r := revoke(bob.ID)
		r.wantStatus(t, http.StatusOK)
		var revoked listedKey
		r.decode(t, &revoked)
		if revoked.ID != bob.ID || revoked.RevokedAt == nil || strings.Contains(string(r.body), bob.Key) {
			t.Fatalf("revoke answered %s", r.body)
		}
		call(t, s.URL, request{method: http.MethodGet, path: "/v1/tasks", key: bob.Key}).
			wantError(t, http.StatusUnauthorized, dockettype.CodeUnauthenticated)
		var again listedKey
		r = revoke(bob.ID)
		r.wantStatus(t, http.StatusOK)
		if r.decode(t, &again); again.RevokedAt == nil || !again.RevokedAt.Equal(*revoked.RevokedAt) {
			t.Fatalf("revoking again = %+v, want revoked_at unchanged %s", again, revoked.RevokedAt)
		}
		if beta, _ = listKeys(t, s.URL, admin, "?tenant=beta"); beta[0].RevokedAt == nil || beta[1].RevokedAt != nil {
			t.Fatalf("beta's keys after revoking bob's = %+v", beta)
		}
		call(t, s.URL, request{method: http.MethodGet, path: "/v1/tasks", key: carol.Key}).wantStatus(t, http.StatusOK)
		revoke("key_nope").wantError(t, http.StatusNotFound, dockettype.CodeNotFound)
		revoke(strings.Repeat("k", 200)).wantError(t, http.StatusNotFound, dockettype.CodeNotFound)

		for _, body := range []string{`{}`, `{"tenant":"beta"}`, `{"principal":"x"}`,
			`{"tenant":"beta","principal":"x","role":"owner"}`, `{"tenant":"bad name","principal":"x"}`,
			`{"tenant":null,"principal":"x"}`, `{"tenant":1,"principal":"x"}`, `{"tenant":"b","principal":"x","role":null}`,
			`{"tenant":"b","principal":"x","extra":1}`, `{"tenant":"b","tenant":"c","principal":"x"}`, `[]`, `{"tenant":"b","principal":"x"} {}`} {
			call(t, s.URL, request{method: http.MethodPost, path: "/v1/admin/keys", key: admin, body: body}).
				wantError(t, http.StatusBadRequest, dockettype.CodeInvalidRequest)
		}
		for _, q := range []string{"?tenant=bad%20name", "?tenant=", "?other=1", "?tenant=a&tenant=b"} {
			call(t, s.URL, request{method: http.MethodGet, path: "/v1/admin/keys" + q, key: admin}).
				wantError(t, http.StatusBadRequest, dockettype.CodeInvalidRequest)
		}
		call(t, s.URL, request{method: http.MethodDelete, path: "/v1/admin/keys", key: admin}).
			wantError(t, http.StatusMethodNotAllowed, dockettype.CodeMethodNotAllowed)
	})
}

// A key revoked through one node is refused by every node: at once by the
// node that revoked it, even though it had the key cached, and by the
// others when their cache entry expires (the contract allows 5 s; nodes
// cache keys for node.KeyCacheTTL). Without a cache, every node refuses
// it at once.
func TestRevokedKeyIsRefusedOnEveryNode(t *testing.T) {
	t.Parallel()
	httpapitest.ForEachDatabase(t, func(t *testing.T, db httpapitest.Database) {
		t.Parallel()
		const ttl = 2 * time.Second
		clock := clockwork.NewFakeClock()
		node := func(cache time.Duration) *httpapitest.Stack {
			return httpapitest.New(t, httpapitest.Options{Store: db.Open(t), Queue: queuedOnly, KeyCacheTTL: cache, KeyCacheClock: clock})
		}
		a, b, c := node(ttl), node(ttl), node(0)
		admin := a.NewAdminKeyFor(t, "ops", "root")
		bob := createKey(t, a.URL, admin, `{"tenant":"beta","principal":"bob"}`)
		bobCalls := func(node *httpapitest.Stack) response {
			return call(t, node.URL, request{method: http.MethodGet, path: "/v1/tasks", key: bob.Key})
		}
		for _, n := range []*httpapitest.Stack{a, b, c} {
			bobCalls(n).wantStatus(t, http.StatusOK) // a and b now hold the key in their caches
		}
		call(t, a.URL, request{method: http.MethodPost, path: "/v1/admin/keys/" + bob.ID + "/revoke", key: admin}).wantStatus(t, http.StatusOK)
		bobCalls(a).wantError(t, http.StatusUnauthorized, dockettype.CodeUnauthenticated)
		bobCalls(c).wantError(t, http.StatusUnauthorized, dockettype.CodeUnauthenticated)
		bobCalls(b).wantStatus(t, http.StatusOK) // still cached on b, for less than the TTL
		clock.Advance(ttl)
		bobCalls(b).wantError(t, http.StatusUnauthorized, dockettype.CodeUnauthenticated)
		bobCalls(a).wantError(t, http.StatusUnauthorized, dockettype.CodeUnauthenticated)
	})
}
