package engine

import (
	"context"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// tenantSelect reads tenants with their in-flight count, storage quota
// and stored bytes (the sums of their counter slots).
const tenantSelect = `SELECT t.id, t.max_in_flight, t.weight, t.created_at,
	(SELECT coalesce(sum(c.n), 0) FROM counters c WHERE c.scope = 'tenant' AND c.key = t.id),
	coalesce(t.storage_quota_bytes, -1),
	(SELECT coalesce(sum(c.bytes), 0) FROM counters c WHERE c.scope = 'tenant' AND c.key = t.id)
	FROM tenants t`

func scanTenant(r Row) (*store.Tenant, error) {
	t := &store.Tenant{}
	var quota int64
	if err := r.Scan(&t.ID, &t.MaxInFlight, &t.Weight, At(&t.CreatedAt), &t.InFlight, &quota, &t.StoredBytes); err != nil {
		return nil, err
	}
	if quota != store.NoStorageQuota {
		t.StorageQuota = &quota
	}
	return t, nil
}

// EnsureTenant creates the tenant if missing.
func (s *Store) EnsureTenant(ctx context.Context, p *store.EnsureTenantParams) (bool, error) {
	if p.DefaultMaxInFlight < 0 {
		return false, store.Named("ensure_tenant", store.ErrInvalid)
	}
	return update(ctx, s.b, "ensure_tenant", func(q Querier) (bool, error) {
		n, err := q.Exec("INSERT INTO tenants (id, max_in_flight, created_at) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING",
			p.ID, p.DefaultMaxInFlight, ts(p.Now))
		return n == 1, err
	})
}

// GetTenant reads a tenant.
func (s *Store) GetTenant(ctx context.Context, id string) (*store.Tenant, error) {
	return read(ctx, s.b, "get_tenant", func(q Querier) (*store.Tenant, error) {
		return one(q, scanTenant, tenantSelect+" WHERE t.id = $1", id)
	})
}

// ListTenants reads every tenant, by ID.
func (s *Store) ListTenants(ctx context.Context) ([]*store.Tenant, error) {
	return read(ctx, s.b, "list_tenants", func(q Querier) ([]*store.Tenant, error) {
		return all(q, scanTenant, tenantSelect+" ORDER BY t.id")
	})
}

// UpdateTenant changes the fields given, creating the tenant if needed.
func (s *Store) UpdateTenant(ctx context.Context, p *store.UpdateTenantParams) (*store.Tenant, error) {
	if p.Tenant == "" || (p.MaxInFlight != nil && *p.MaxInFlight < 0) || (p.Weight != nil && *p.Weight < 1) ||
		(p.StorageQuota != nil && *p.StorageQuota < 0 && *p.StorageQuota != store.NoStorageQuota) {
		return nil, store.Named("update_tenant", store.ErrInvalid)
	}
	// $5 says whether the quota changes; $6 is the new one (NULL: none).
	setQuota := p.StorageQuota != nil
	var quota *int64
	if setQuota && *p.StorageQuota != store.NoStorageQuota {
		quota = p.StorageQuota
	}
	_, err := update(ctx, s.b, "update_tenant", func(q Querier) (int64, error) {
		return q.Exec(`INSERT INTO tenants (id, max_in_flight, weight, created_at, storage_quota_bytes)
			VALUES ($1, coalesce($2, 0), coalesce($3, 1), $4, $6)
			ON CONFLICT (id) DO UPDATE SET max_in_flight = coalesce($2, tenants.max_in_flight),
				weight = coalesce($3, tenants.weight),
				storage_quota_bytes = CASE WHEN $5 THEN $6 ELSE tenants.storage_quota_bytes END`,
			p.Tenant, p.MaxInFlight, p.Weight, ts(p.Now), setQuota, quota)
	})
	if err != nil {
		return nil, err
	}
	return s.GetTenant(ctx, p.Tenant)
}

// CreateAPIKey stores a key hash, creating the tenant if needed.
func (s *Store) CreateAPIKey(ctx context.Context, p *store.CreateAPIKeyParams) (*store.APIKey, error) {
	if p.ID == "" || p.Hash == "" || p.Tenant == "" || p.Principal == "" || !p.Role.Valid() ||
		(p.AllTenants && p.Role != dockettype.RoleWorker) {
		return nil, store.Named("create_api_key", store.ErrInvalid)
	}
	_, err := update(ctx, s.b, "create_api_key", func(q Querier) (int64, error) {
		if _, err := q.Exec("INSERT INTO tenants (id, created_at) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING", p.Tenant, ts(p.Now)); err != nil {
			return 0, err
		}
		return q.Exec(`INSERT INTO api_keys (id, hash, tenant, principal, role, all_tenants, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7)`, p.ID, p.Hash, p.Tenant, p.Principal, string(p.Role), p.AllTenants, ts(p.Now))
	})
	if err != nil {
		return nil, err
	}
	return &store.APIKey{ID: p.ID, Tenant: p.Tenant, Principal: p.Principal, Role: p.Role, AllTenants: p.AllTenants,
		CreatedAt: ts(p.Now)}, nil
}

const keyCols = "id, tenant, principal, role, all_tenants, created_at, revoked_at"

func scanKey(r Row) (*store.APIKey, error) {
	k := &store.APIKey{}
	return k, r.Scan(&k.ID, &k.Tenant, &k.Principal, &k.Role, &k.AllTenants, At(&k.CreatedAt), AtOrNil(&k.RevokedAt))
}

// LookupAPIKey finds a non-revoked key by its hash.
func (s *Store) LookupAPIKey(ctx context.Context, hash string) (*store.APIKey, error) {
	k, err := read(ctx, s.b, "lookup_api_key", func(q Querier) (*store.APIKey, error) {
		return one(q, scanKey, "SELECT "+keyCols+" FROM api_keys WHERE hash = $1 AND revoked_at IS NULL", hash)
	})
	if err != nil {
		return nil, err
	}
	k.Hash = hash
	return k, nil
}

// ListAPIKeys lists keys (of a tenant, or all), oldest first, without hashes.
func (s *Store) ListAPIKeys(ctx context.Context, tenant string) ([]*store.APIKey, error) {
	return read(ctx, s.b, "list_api_keys", func(q Querier) ([]*store.APIKey, error) {
		return all(q, scanKey, "SELECT "+keyCols+" FROM api_keys WHERE $1 = '' OR tenant = $1 ORDER BY created_at, id", tenant)
	})
}

// RevokeAPIKey revokes a key once and returns it.
func (s *Store) RevokeAPIKey(ctx context.Context, p *store.RevokeAPIKeyParams) (*store.APIKey, error) {
	return update(ctx, s.b, "revoke_api_key", func(q Querier) (*store.APIKey, error) {
		return one(q, scanKey, "UPDATE api_keys SET revoked_at = coalesce(revoked_at, $2) WHERE id = $1 RETURNING "+keyCols, p.ID, ts(p.Now))
	})
}
