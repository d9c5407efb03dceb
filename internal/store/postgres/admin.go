package postgres

import (
	"context"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// tenantSelect reads tenants with their in-flight count (the sum of their
// counter slots).
const tenantSelect = `SELECT t.id, t.max_in_flight, t.weight, t.created_at,
	(SELECT coalesce(sum(c.n), 0) FROM counters c WHERE c.scope = 'tenant' AND c.key = t.id)
	FROM tenants t`

func scanTenant(r pgx.Row) (*store.Tenant, error) {
	t := &store.Tenant{}
	if err := r.Scan(&t.ID, &t.MaxInFlight, &t.Weight, &t.CreatedAt, &t.InFlight); err != nil {
		return nil, err
	}
	t.CreatedAt = t.CreatedAt.UTC()
	return t, nil
}

// EnsureTenant creates the tenant if missing.
func (b *Backend) EnsureTenant(ctx context.Context, p *store.EnsureTenantParams) (bool, error) {
	if p.DefaultMaxInFlight < 0 {
		return false, interpretError("ensure_tenant", store.ErrInvalid)
	}
	tag, err := b.pool.Exec(ctx, "INSERT INTO tenants (id, max_in_flight, created_at) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING",
		p.ID, p.DefaultMaxInFlight, ts(p.Now))
	if err != nil {
		return false, interpretError("ensure_tenant", err)
	}
	return tag.RowsAffected() == 1, nil
}

// GetTenant reads a tenant.
func (b *Backend) GetTenant(ctx context.Context, id string) (*store.Tenant, error) {
	t, err := scanTenant(b.pool.QueryRow(ctx, tenantSelect+" WHERE t.id = $1", id))
	return t, interpretError("get_tenant", err)
}

// ListTenants reads every tenant, by ID.
func (b *Backend) ListTenants(ctx context.Context) ([]*store.Tenant, error) {
	rows, err := b.pool.Query(ctx, tenantSelect+" ORDER BY t.id")
	if err != nil {
		return nil, interpretError("list_tenants", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*store.Tenant, error) { return scanTenant(r) })
	return out, interpretError("list_tenants", err)
}

// UpdateTenant changes the fields given, creating the tenant if needed.
func (b *Backend) UpdateTenant(ctx context.Context, p *store.UpdateTenantParams) (*store.Tenant, error) {
	if p.Tenant == "" || (p.MaxInFlight != nil && *p.MaxInFlight < 0) || (p.Weight != nil && *p.Weight < 1) {
		return nil, interpretError("update_tenant", store.ErrInvalid)
	}
	_, err := b.pool.Exec(ctx, `INSERT INTO tenants (id, max_in_flight, weight, created_at)
		VALUES ($1, coalesce($2, 0), coalesce($3, 1), $4)
		ON CONFLICT (id) DO UPDATE SET max_in_flight = coalesce($2, tenants.max_in_flight),
			weight = coalesce($3, tenants.weight)`, p.Tenant, p.MaxInFlight, p.Weight, ts(p.Now))
	if err != nil {
		return nil, interpretError("update_tenant", err)
	}
	return b.GetTenant(ctx, p.Tenant)
}

// CreateAPIKey stores a key hash, creating the tenant if needed.
func (b *Backend) CreateAPIKey(ctx context.Context, p *store.CreateAPIKeyParams) (*store.APIKey, error) {
	if p.ID == "" || p.Hash == "" || p.Tenant == "" || p.Principal == "" || !p.Role.Valid() ||
		(p.AllTenants && p.Role != dockettype.RoleWorker) {
		return nil, interpretError("create_api_key", store.ErrInvalid)
	}
	err := b.write(ctx, "create_api_key", func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "INSERT INTO tenants (id, created_at) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING", p.Tenant, ts(p.Now)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO api_keys (id, hash, tenant, principal, role, all_tenants, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7)`,
			p.ID, p.Hash, p.Tenant, p.Principal, string(p.Role), p.AllTenants, ts(p.Now))
		return err
	})
	if err != nil {
		return nil, err
	}
	return &store.APIKey{ID: p.ID, Tenant: p.Tenant, Principal: p.Principal, Role: p.Role, AllTenants: p.AllTenants,
		CreatedAt: ts(p.Now)}, nil
}

const keyCols = "id, tenant, principal, role, all_tenants, created_at, revoked_at"

func scanKey(r pgx.Row) (*store.APIKey, error) {
	k := &store.APIKey{}
	var (
		role    string
		revoked *time.Time
	)
	if err := r.Scan(&k.ID, &k.Tenant, &k.Principal, &role, &k.AllTenants, &k.CreatedAt, &revoked); err != nil {
		return nil, err
	}
	k.Role, k.CreatedAt, k.RevokedAt = dockettype.Role(role), k.CreatedAt.UTC(), utcPtr(revoked)
	return k, nil
}

// LookupAPIKey finds a non-revoked key by its hash.
func (b *Backend) LookupAPIKey(ctx context.Context, hash string) (*store.APIKey, error) {
	k, err := scanKey(b.pool.QueryRow(ctx, "SELECT "+keyCols+" FROM api_keys WHERE hash = $1 AND revoked_at IS NULL", hash))
	if err != nil {
		return nil, interpretError("lookup_api_key", err)
	}
	k.Hash = hash
	return k, nil
}

// ListAPIKeys lists keys (of a tenant, or all), oldest first, without hashes.
func (b *Backend) ListAPIKeys(ctx context.Context, tenant string) ([]*store.APIKey, error) {
	rows, err := b.pool.Query(ctx, "SELECT "+keyCols+" FROM api_keys WHERE $1 = '' OR tenant = $1 ORDER BY created_at, id", tenant)
	if err != nil {
		return nil, interpretError("list_api_keys", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*store.APIKey, error) { return scanKey(r) })
	return out, interpretError("list_api_keys", err)
}

// RevokeAPIKey revokes a key once and returns it.
func (b *Backend) RevokeAPIKey(ctx context.Context, p *store.RevokeAPIKeyParams) (*store.APIKey, error) {
	k, err := scanKey(b.pool.QueryRow(ctx, `UPDATE api_keys SET revoked_at = coalesce(revoked_at, $2)
		WHERE id = $1 RETURNING `+keyCols, p.ID, ts(p.Now)))
	return k, interpretError("revoke_api_key", err)
}

// PublishRuleSet stores the next version. The table lock (which readers do
// not take) makes concurrent publishers number their versions one after the
// other instead of colliding on the same number.
func (b *Backend) PublishRuleSet(ctx context.Context, p *store.PublishRuleSetParams) (*store.RuleSet, error) {
	var rs *store.RuleSet
	err := b.write(ctx, "publish_rule_set", func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "LOCK TABLE rule_sets IN SHARE ROW EXCLUSIVE MODE"); err != nil {
			return err
		}
		var seq int64
		if err := tx.QueryRow(ctx, "SELECT coalesce(max(seq), 0) + 1 FROM rule_sets").Scan(&seq); err != nil {
			return err
		}
		version := "v" + strconv.FormatInt(seq, 10)
		body := p.Body
		if body == nil {
			body = []byte{}
		}
		if _, err := tx.Exec(ctx, "INSERT INTO rule_sets (seq, version, hash, body, published_at) VALUES ($1, $2, $3, $4, $5)",
			seq, version, p.Hash, body, ts(p.Now)); err != nil {
			return err
		}
		rs = &store.RuleSet{Version: version, Hash: p.Hash, Body: p.Body, PublishedAt: ts(p.Now)}
		return nil
	})
	return rs, err
}

// ListRuleSets lists versions, oldest first, without bodies.
func (b *Backend) ListRuleSets(ctx context.Context) ([]*store.RuleSet, error) {
	rows, err := b.pool.Query(ctx, "SELECT version, hash, published_at FROM rule_sets ORDER BY seq")
	if err != nil {
		return nil, interpretError("list_rule_sets", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*store.RuleSet, error) {
		rs := &store.RuleSet{}
		err := r.Scan(&rs.Version, &rs.Hash, &rs.PublishedAt)
		rs.PublishedAt = rs.PublishedAt.UTC()
		return rs, err
	})
	return out, interpretError("list_rule_sets", err)
}

// GetRuleSet reads one version.
func (b *Backend) GetRuleSet(ctx context.Context, version string) (*store.RuleSet, error) {
	return b.ruleSet(ctx, "get_rule_set", "body", "WHERE version = $1", version)
}

// LatestRuleSet reads the newest version, without its body.
func (b *Backend) LatestRuleSet(ctx context.Context) (*store.RuleSet, error) {
	return b.ruleSet(ctx, "latest_rule_set", "NULL::bytea", "ORDER BY seq DESC LIMIT 1")
}

// ruleSet reads one rule set row; bodyCol is "body", or a NULL to skip it.
func (b *Backend) ruleSet(ctx context.Context, op, bodyCol, where string, args ...any) (*store.RuleSet, error) {
	rs := &store.RuleSet{}
	err := b.pool.QueryRow(ctx, "SELECT version, hash, "+bodyCol+", published_at FROM rule_sets "+where, args...).
		Scan(&rs.Version, &rs.Hash, &rs.Body, &rs.PublishedAt)
	if err != nil {
		return nil, interpretError(op, err)
	}
	rs.PublishedAt = rs.PublishedAt.UTC()
	return rs, nil
}
