package engine

import (
	"context"
	"strconv"

	"github.com/docket-dev/docket/internal/store"
)

// PublishRuleSet stores the next version: v1, v2, … in publishing order.
func (s *Store) PublishRuleSet(ctx context.Context, p *store.PublishRuleSetParams) (*store.RuleSet, error) {
	body := p.Body
	if body == nil {
		body = []byte{}
	}
	return update(ctx, s.b, "publish_rule_set", func(q Querier) (*store.RuleSet, error) {
		if lock := s.b.Dialect().LockRuleSets; lock != "" {
			if _, err := q.Exec(lock); err != nil {
				return nil, err
			}
		}
		var seq int64
		if _, err := one(q, scanInto(&seq), "SELECT coalesce(max(seq), 0) + 1 FROM rule_sets"); err != nil {
			return nil, err
		}
		version := "v" + strconv.FormatInt(seq, 10)
		if _, err := q.Exec("INSERT INTO rule_sets (seq, version, hash, body, published_at) VALUES ($1, $2, $3, $4, $5)",
			seq, version, p.Hash, body, ts(p.Now)); err != nil {
			return nil, err
		}
		return &store.RuleSet{Version: version, Hash: p.Hash, Body: p.Body, PublishedAt: ts(p.Now)}, nil
	})
}

func scanRuleSet(r Row) (*store.RuleSet, error) {
	rs := &store.RuleSet{}
	return rs, r.Scan(&rs.Version, &rs.Hash, &rs.Body, At(&rs.PublishedAt))
}

// ListRuleSets lists versions, oldest first, without bodies.
func (s *Store) ListRuleSets(ctx context.Context) ([]*store.RuleSet, error) {
	return read(ctx, s.b, "list_rule_sets", func(q Querier) ([]*store.RuleSet, error) {
		return all(q, scanRuleSet, "SELECT version, hash, NULL, published_at FROM rule_sets ORDER BY seq")
	})
}

// GetRuleSet reads one version.
func (s *Store) GetRuleSet(ctx context.Context, version string) (*store.RuleSet, error) {
	return read(ctx, s.b, "get_rule_set", func(q Querier) (*store.RuleSet, error) {
		return one(q, scanRuleSet, "SELECT version, hash, body, published_at FROM rule_sets WHERE version = $1", version)
	})
}

// LatestRuleSet reads the newest version, without its body.
func (s *Store) LatestRuleSet(ctx context.Context) (*store.RuleSet, error) {
	return read(ctx, s.b, "latest_rule_set", func(q Querier) (*store.RuleSet, error) {
		return one(q, scanRuleSet, "SELECT version, hash, NULL, published_at FROM rule_sets ORDER BY seq DESC LIMIT 1")
	})
}
