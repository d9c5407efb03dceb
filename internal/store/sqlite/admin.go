package sqlite

import (
	"context"
	"fmt"
	"strconv"

	"github.com/docket-dev/docket/internal/store"
)

// EnsureTenant creates the tenant if missing.
func (s *Store) EnsureTenant(ctx context.Context, p *store.EnsureTenantParams) (bool, error) {
	if p.DefaultMaxInFlight < 0 {
		return false, fmt.Errorf("ensure_tenant: %w", store.ErrInvalid)
	}
	var created bool
	err := s.write(ctx, "ensure_tenant", func(tx *wtx) error {
		res, err := tx.ExecContext(ctx, "INSERT INTO tenants (id, max_in_flight, created_at) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING",
			p.ID, p.DefaultMaxInFlight, ms(p.Now))
		if err != nil {
			return err
		}
		n, _ := res.RowsAffected()
		created = n == 1
		return nil
	})
	return created, err
}

// GetTenant reads a tenant.
func (s *Store) GetTenant(ctx context.Context, id string) (*store.Tenant, error) {
	t := &store.Tenant{ID: id}
	var at int64
	err := s.r.QueryRowContext(ctx, "SELECT max_in_flight, weight, in_flight, created_at FROM tenants WHERE id = ?", id).
		Scan(&t.MaxInFlight, &t.Weight, &t.InFlight, &at)
	if err != nil {
		return nil, interpretError("get_tenant", err)
	}
	t.CreatedAt = fromMS(at)
	return t, nil
}

// SetTenantLimits sets (creating the tenant if needed) its limits.
func (s *Store) SetTenantLimits(ctx context.Context, p *store.SetTenantLimitsParams) error {
	if p.MaxInFlight < 0 || p.Weight < 1 {
		return fmt.Errorf("set_tenant_limits: %w", store.ErrInvalid)
	}
	return s.write(ctx, "set_tenant_limits", func(tx *wtx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO tenants (id, max_in_flight, weight, created_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET max_in_flight = excluded.max_in_flight, weight = excluded.weight`,
			p.Tenant, p.MaxInFlight, p.Weight, ms(p.Now))
		return err
	})
}

// CreateAPIKey stores a key hash, creating the tenant if needed.
func (s *Store) CreateAPIKey(ctx context.Context, p *store.CreateAPIKeyParams) error {
	return s.write(ctx, "create_api_key", func(tx *wtx) error {
		if _, err := tx.ExecContext(ctx, "INSERT INTO tenants (id, created_at) VALUES (?, ?) ON CONFLICT (id) DO NOTHING", p.Tenant, ms(p.Now)); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, "INSERT INTO api_keys (hash, tenant, principal, role, created_at) VALUES (?, ?, ?, ?, ?)",
			p.Hash, p.Tenant, p.Principal, p.Role, ms(p.Now))
		return err
	})
}

// LookupAPIKey finds a non-revoked key by its hash.
func (s *Store) LookupAPIKey(ctx context.Context, hash string) (*store.APIKey, error) {
	k := &store.APIKey{Hash: hash}
	var at int64
	err := s.r.QueryRowContext(ctx, "SELECT tenant, principal, role, created_at FROM api_keys WHERE hash = ? AND revoked_at IS NULL", hash).
		Scan(&k.Tenant, &k.Principal, &k.Role, &at)
	if err != nil {
		return nil, interpretError("lookup_api_key", err)
	}
	k.CreatedAt = fromMS(at)
	return k, nil
}

// PublishRuleSet stores the next version.
func (s *Store) PublishRuleSet(ctx context.Context, p *store.PublishRuleSetParams) (*store.RuleSet, error) {
	var rs *store.RuleSet
	err := s.write(ctx, "publish_rule_set", func(tx *wtx) error {
		var seq int64
		if err := tx.QueryRowContext(ctx, "SELECT coalesce(max(seq), 0) + 1 FROM rule_sets").Scan(&seq); err != nil {
			return err
		}
		version := "v" + strconv.FormatInt(seq, 10)
		if _, err := tx.ExecContext(ctx, "INSERT INTO rule_sets (seq, version, hash, body, published_at) VALUES (?, ?, ?, ?, ?)",
			seq, version, p.Hash, p.Body, ms(p.Now)); err != nil {
			return err
		}
		rs = &store.RuleSet{Version: version, Hash: p.Hash, Body: p.Body, PublishedAt: fromMS(ms(p.Now))}
		return nil
	})
	return rs, err
}

// ListRuleSets lists versions, oldest first, without bodies.
func (s *Store) ListRuleSets(ctx context.Context) ([]*store.RuleSet, error) {
	rows, err := s.r.QueryContext(ctx, "SELECT version, hash, published_at FROM rule_sets ORDER BY seq")
	if err != nil {
		return nil, interpretError("list_rule_sets", err)
	}
	defer rows.Close()
	var out []*store.RuleSet
	for rows.Next() {
		rs := &store.RuleSet{}
		var at int64
		if err := rows.Scan(&rs.Version, &rs.Hash, &at); err != nil {
			return nil, interpretError("list_rule_sets", err)
		}
		rs.PublishedAt = fromMS(at)
		out = append(out, rs)
	}
	return out, interpretError("list_rule_sets", rows.Err())
}

// GetRuleSet reads one version.
func (s *Store) GetRuleSet(ctx context.Context, version string) (*store.RuleSet, error) {
	return s.ruleSet(ctx, "get_rule_set", "body", "WHERE version = ?", version)
}

// LatestRuleSet reads the newest version, without its body.
func (s *Store) LatestRuleSet(ctx context.Context) (*store.RuleSet, error) {
	return s.ruleSet(ctx, "latest_rule_set", "NULL", "ORDER BY seq DESC LIMIT 1")
}

// ruleSet reads one rule set row; bodyCol is "body", or a NULL to skip it.
func (s *Store) ruleSet(ctx context.Context, op, bodyCol, where string, args ...any) (*store.RuleSet, error) {
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
