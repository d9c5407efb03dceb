package sqlite

import (
	"context"
	"database/sql"
	"strconv"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// tenantSelect reads tenants with their in-flight count (the sum of their
// counter slots).
const tenantSelect = `SELECT t.id, t.max_in_flight, t.weight, t.created_at,
	(SELECT coalesce(sum(c.n), 0) FROM counters c WHERE c.scope = 'tenant' AND c.key = t.id)
	FROM tenants t`

func scanTenant(r scanner) (*store.Tenant, error) {
	t := &store.Tenant{}
	var created int64
	if err := r.Scan(&t.ID, &t.MaxInFlight, &t.Weight, &created, &t.InFlight); err != nil {
		return nil, err
	}
	t.CreatedAt = fromMS(created)
	return t, nil
}

// EnsureTenant creates the tenant if missing.
func (s *Backend) EnsureTenant(ctx context.Context, p *store.EnsureTenantParams) (bool, error) {
	if p.DefaultMaxInFlight < 0 {
		return false, interpretError("ensure_tenant", store.ErrInvalid)
	}
	var created bool
	err := s.write(ctx, "ensure_tenant", func(tx *wtx) error {
		res, err := tx.ExecContext(ctx, "INSERT INTO tenants (id, max_in_flight, created_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
			p.ID, p.DefaultMaxInFlight, ms(p.Now))
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		created = n == 1
		return err
	})
	return created, err
}

// GetTenant reads a tenant.
func (s *Backend) GetTenant(ctx context.Context, id string) (*store.Tenant, error) {
	t, err := scanTenant(s.r.QueryRowContext(ctx, tenantSelect+" WHERE t.id = ?", id))
	return t, interpretError("get_tenant", err)
}

// ListTenants reads every tenant, by ID.
func (s *Backend) ListTenants(ctx context.Context) ([]*store.Tenant, error) {
	rows, err := s.r.QueryContext(ctx, tenantSelect+" ORDER BY t.id")
	if err != nil {
		return nil, interpretError("list_tenants", err)
	}
	out, err := collect(rows, func(r *sql.Rows) (*store.Tenant, error) { return scanTenant(r) })
	return out, interpretError("list_tenants", err)
}

// UpdateTenant changes the fields given, creating the tenant if needed.
func (s *Backend) UpdateTenant(ctx context.Context, p *store.UpdateTenantParams) (*store.Tenant, error) {
	if p.Tenant == "" || (p.MaxInFlight != nil && *p.MaxInFlight < 0) || (p.Weight != nil && *p.Weight < 1) {
		return nil, interpretError("update_tenant", store.ErrInvalid)
	}
	err := s.write(ctx, "update_tenant", func(tx *wtx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO tenants (id, max_in_flight, weight, created_at)
			VALUES (?1, coalesce(?2, 0), coalesce(?3, 1), ?4)
			ON CONFLICT (id) DO UPDATE SET max_in_flight = coalesce(?2, max_in_flight), weight = coalesce(?3, weight)`,
			p.Tenant, p.MaxInFlight, p.Weight, ms(p.Now))
		return err
	})
	if err != nil {
		return nil, err
	}
	return s.GetTenant(ctx, p.Tenant)
}

// CreateAPIKey stores a key hash, creating the tenant if needed.
func (s *Backend) CreateAPIKey(ctx context.Context, p *store.CreateAPIKeyParams) (*store.APIKey, error) {
	if p.ID == "" || p.Hash == "" || p.Tenant == "" || p.Principal == "" || !p.Role.Valid() ||
		(p.AllTenants && p.Role != dockettype.RoleWorker) {
		return nil, interpretError("create_api_key", store.ErrInvalid)
	}
	err := s.write(ctx, "create_api_key", func(tx *wtx) error {
		if _, err := tx.ExecContext(ctx, "INSERT INTO tenants (id, created_at) VALUES (?, ?) ON CONFLICT DO NOTHING", p.Tenant, ms(p.Now)); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO api_keys (id, hash, tenant, principal, role, all_tenants, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, p.ID, p.Hash, p.Tenant, p.Principal, string(p.Role), b2i(p.AllTenants), ms(p.Now))
		return err
	})
	if err != nil {
		return nil, err
	}
	return &store.APIKey{ID: p.ID, Tenant: p.Tenant, Principal: p.Principal, Role: p.Role, AllTenants: p.AllTenants,
		CreatedAt: fromMS(ms(p.Now))}, nil
}

const keyCols = "id, tenant, principal, role, all_tenants, created_at, revoked_at"

func scanKey(r scanner) (*store.APIKey, error) {
	k := &store.APIKey{}
	var (
		role    string
		created int64
		revoked sql.NullInt64
	)
	if err := r.Scan(&k.ID, &k.Tenant, &k.Principal, &role, &k.AllTenants, &created, &revoked); err != nil {
		return nil, err
	}
	k.Role, k.CreatedAt, k.RevokedAt = dockettype.Role(role), fromMS(created), fromNullMS(revoked)
	return k, nil
}

// LookupAPIKey finds a non-revoked key by its hash.
func (s *Backend) LookupAPIKey(ctx context.Context, hash string) (*store.APIKey, error) {
	k, err := scanKey(s.r.QueryRowContext(ctx, "SELECT "+keyCols+" FROM api_keys WHERE hash = ? AND revoked_at IS NULL", hash))
	if err != nil {
		return nil, interpretError("lookup_api_key", err)
	}
	k.Hash = hash
	return k, nil
}

// ListAPIKeys lists keys (of a tenant, or all), oldest first, without hashes.
func (s *Backend) ListAPIKeys(ctx context.Context, tenant string) ([]*store.APIKey, error) {
	rows, err := s.r.QueryContext(ctx, "SELECT "+keyCols+" FROM api_keys WHERE ?1 = '' OR tenant = ?1 ORDER BY created_at, id", tenant)
	if err != nil {
		return nil, interpretError("list_api_keys", err)
	}
	out, err := collect(rows, func(r *sql.Rows) (*store.APIKey, error) { return scanKey(r) })
	return out, interpretError("list_api_keys", err)
}

// RevokeAPIKey revokes a key once and returns it.
func (s *Backend) RevokeAPIKey(ctx context.Context, p *store.RevokeAPIKeyParams) (*store.APIKey, error) {
	var k *store.APIKey
	err := s.write(ctx, "revoke_api_key", func(tx *wtx) error {
		var err error
		k, err = scanKey(tx.QueryRowContext(ctx, `UPDATE api_keys SET revoked_at = coalesce(revoked_at, ?)
			WHERE id = ? RETURNING `+keyCols, ms(p.Now), p.ID))
		return err
	})
	return k, err
}

// PublishRuleSet stores the next version (the write transaction numbers
// versions one after the other).
func (s *Backend) PublishRuleSet(ctx context.Context, p *store.PublishRuleSetParams) (*store.RuleSet, error) {
	var rs *store.RuleSet
	body := p.Body
	if body == nil {
		body = []byte{}
	}
	err := s.write(ctx, "publish_rule_set", func(tx *wtx) error {
		var seq int64
		if err := tx.QueryRowContext(ctx, "SELECT coalesce(max(seq), 0) + 1 FROM rule_sets").Scan(&seq); err != nil {
			return err
		}
		version := "v" + strconv.FormatInt(seq, 10)
		if _, err := tx.ExecContext(ctx, "INSERT INTO rule_sets (seq, version, hash, body, published_at) VALUES (?, ?, ?, ?, ?)",
			seq, version, p.Hash, body, ms(p.Now)); err != nil {
			return err
		}
		rs = &store.RuleSet{Version: version, Hash: p.Hash, Body: p.Body, PublishedAt: fromMS(ms(p.Now))}
		return nil
	})
	return rs, err
}

// ListRuleSets lists versions, oldest first, without bodies.
func (s *Backend) ListRuleSets(ctx context.Context) ([]*store.RuleSet, error) {
	rows, err := s.r.QueryContext(ctx, "SELECT version, hash, published_at FROM rule_sets ORDER BY seq")
	if err != nil {
		return nil, interpretError("list_rule_sets", err)
	}
	out, err := collect(rows, func(r *sql.Rows) (*store.RuleSet, error) {
		rs := &store.RuleSet{}
		var at int64
		err := r.Scan(&rs.Version, &rs.Hash, &at)
		rs.PublishedAt = fromMS(at)
		return rs, err
	})
	return out, interpretError("list_rule_sets", err)
}

// GetRuleSet reads one version.
func (s *Backend) GetRuleSet(ctx context.Context, version string) (*store.RuleSet, error) {
	return s.ruleSet(ctx, "get_rule_set", "body", "WHERE version = ?", version)
}

// LatestRuleSet reads the newest version, without its body.
func (s *Backend) LatestRuleSet(ctx context.Context) (*store.RuleSet, error) {
	return s.ruleSet(ctx, "latest_rule_set", "NULL", "ORDER BY seq DESC LIMIT 1")
}

// ruleSet reads one rule set row; bodyCol is "body", or a NULL to skip it.
func (s *Backend) ruleSet(ctx context.Context, op, bodyCol, where string, args ...any) (*store.RuleSet, error) {
	rs := &store.RuleSet{}
	var at int64
	err := s.r.QueryRowContext(ctx, "SELECT version, hash, "+bodyCol+", published_at FROM rule_sets "+where, args...).
		Scan(&rs.Version, &rs.Hash, &rs.Body, &at)
	if err != nil {
		return nil, interpretError(op, err)
	}
	rs.PublishedAt = fromMS(at)
	return rs, nil
}
