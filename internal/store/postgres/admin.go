package postgres

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// EnsureTenant creates the tenant if missing.
func (s *Store) EnsureTenant(ctx context.Context, p *store.EnsureTenantParams) (bool, error) {
	if p.DefaultMaxInFlight < 0 {
		return false, fmt.Errorf("ensure_tenant: %w", store.ErrInvalid)
	}
	tag, err := s.pool.Exec(ctx, "INSERT INTO tenants (id, max_in_flight, created_at) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING",
		p.ID, p.DefaultMaxInFlight, ts(p.Now))
	if err != nil {
		return false, interpretError("ensure_tenant", err)
	}
	return tag.RowsAffected() == 1, nil
}

// GetTenant reads a tenant.
func (s *Store) GetTenant(ctx context.Context, id string) (*store.Tenant, error) {
	t := &store.Tenant{ID: id}
	err := s.pool.QueryRow(ctx, "SELECT max_in_flight, weight, in_flight, created_at FROM tenants WHERE id = $1", id).
		Scan(&t.MaxInFlight, &t.Weight, &t.InFlight, &t.CreatedAt)
	if err != nil {
		return nil, interpretError("get_tenant", err)
	}
	t.CreatedAt = t.CreatedAt.UTC()
	return t, nil
}

// SetTenantLimits sets (creating the tenant if needed) its limits.
func (s *Store) SetTenantLimits(ctx context.Context, p *store.SetTenantLimitsParams) error {
	if p.MaxInFlight < 0 || p.Weight < 1 {
		return fmt.Errorf("set_tenant_limits: %w", store.ErrInvalid)
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO tenants (id, max_in_flight, weight, created_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (id) DO UPDATE SET max_in_flight = excluded.max_in_flight, weight = excluded.weight`,
		p.Tenant, p.MaxInFlight, p.Weight, ts(p.Now))
	return interpretError("set_tenant_limits", err)
}

// CreateAPIKey stores a key hash, creating the tenant if needed.
func (s *Store) CreateAPIKey(ctx context.Context, p *store.CreateAPIKeyParams) error {
	return s.write(ctx, "create_api_key", func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "INSERT INTO tenants (id, created_at) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING", p.Tenant, ts(p.Now)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "INSERT INTO api_keys (hash, tenant, principal, role, created_at) VALUES ($1, $2, $3, $4, $5)",
			p.Hash, p.Tenant, p.Principal, string(p.Role), ts(p.Now))
		return err
	})
}

// LookupAPIKey finds a non-revoked key by its hash.
func (s *Store) LookupAPIKey(ctx context.Context, hash string) (*store.APIKey, error) {
	k := &store.APIKey{Hash: hash}
	var role string
	err := s.pool.QueryRow(ctx, "SELECT tenant, principal, role, created_at FROM api_keys WHERE hash = $1 AND revoked_at IS NULL", hash).
		Scan(&k.Tenant, &k.Principal, &role, &k.CreatedAt)
	if err != nil {
		return nil, interpretError("lookup_api_key", err)
	}
	k.Role = dockettype.Role(role)
	k.CreatedAt = k.CreatedAt.UTC()
	return k, nil
}

// PublishRuleSet stores the next version. The table lock (which readers do
// not take) makes concurrent publishers number their versions one after the
// other instead of colliding on the same number.
func (s *Store) PublishRuleSet(ctx context.Context, p *store.PublishRuleSetParams) (*store.RuleSet, error) {
	var rs *store.RuleSet
	err := s.write(ctx, "publish_rule_set", func(tx pgx.Tx) error {
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
func (s *Store) ListRuleSets(ctx context.Context) ([]*store.RuleSet, error) {
	rows, err := s.pool.Query(ctx, "SELECT version, hash, published_at FROM rule_sets ORDER BY seq")
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
func (s *Store) GetRuleSet(ctx context.Context, version string) (*store.RuleSet, error) {
	return s.ruleSet(ctx, "get_rule_set", "body", "WHERE version = $1", version)
}

// LatestRuleSet reads the newest version, without its body.
func (s *Store) LatestRuleSet(ctx context.Context) (*store.RuleSet, error) {
	return s.ruleSet(ctx, "latest_rule_set", "NULL::bytea", "ORDER BY seq DESC LIMIT 1")
}

// ruleSet reads one rule set row; bodyCol is "body", or a NULL to skip it.
func (s *Store) ruleSet(ctx context.Context, op, bodyCol, where string, args ...any) (*store.RuleSet, error) {
	rs := &store.RuleSet{}
	err := s.pool.QueryRow(ctx, "SELECT version, hash, "+bodyCol+", published_at FROM rule_sets "+where, args...).
		Scan(&rs.Version, &rs.Hash, &rs.Body, &rs.PublishedAt)
	if err != nil {
		return nil, interpretError(op, err)
	}
	rs.PublishedAt = rs.PublishedAt.UTC()
	return rs, nil
}
