package httpapi_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/httpapi/httpapitest"
	"github.com/docket-dev/docket/internal/store"
)

// GET /v1/admin/rules lists the published rule set versions, oldest first,
// without their bodies; a member key is refused.
func TestAdminListRuleSets(t *testing.T) {
	t.Parallel()
	httpapitest.ForEachDatabase(t, func(t *testing.T, db httpapitest.Database) {
		t.Parallel()
		s := httpapitest.New(t, httpapitest.Options{Store: db.Open(t), Queue: queuedOnly})
		admin := s.NewAdminKeyFor(t, "ops", "root")
		type ruleSetAnswer struct {
			Version     string    `json:"version"`
			Hash        string    `json:"hash"`
			PublishedAt time.Time `json:"published_at"`
		}
		list := func() []ruleSetAnswer {
			t.Helper()
			r := call(t, s.URL, request{method: http.MethodGet, path: "/v1/admin/rules", key: admin})
			r.wantStatus(t, http.StatusOK)
			var got struct {
				RuleSets []ruleSetAnswer `json:"rule_sets"`
			}
			r.decode(t, &got)
			if got.RuleSets == nil {
				t.Fatalf("rule_sets is not a list: %s", r.body)
			}
			return got.RuleSets
		}
		if got := list(); len(got) != 0 {
			t.Fatalf("rule sets before any publish = %+v, want none", got)
		}

		ctx := context.Background()
		at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		var published []*store.RuleSet
		for i, hash := range []string{"sha256:aaa", "sha256:bbb"} {
			rs, err := s.Store.PublishRuleSet(ctx, &store.PublishRuleSetParams{
				Now: at.Add(time.Duration(i) * time.Hour), Hash: hash,
				Body: []byte(`{"name":"n","rules":[{"id":"len","kind":"length","min":1}]}`),
			})
			if err != nil {
				t.Fatal(err)
			}
			published = append(published, rs)
		}
		got := list()
		if len(got) != len(published) {
			t.Fatalf("rule sets = %+v, want %d", got, len(published))
		}
		for i, rs := range published {
			if got[i].Version != rs.Version || got[i].Hash != rs.Hash || !got[i].PublishedAt.Equal(rs.PublishedAt) {
				t.Errorf("rule set %d = %+v, want %s %s %s", i, got[i], rs.Version, rs.Hash, rs.PublishedAt)
			}
		}

		call(t, s.URL, request{method: http.MethodGet, path: "/v1/admin/rules", key: s.Key}).
			wantError(t, http.StatusForbidden, dockettype.CodeForbidden)
		call(t, s.URL, request{method: http.MethodGet, path: "/v1/admin/rules?version=v1", key: admin}).
			wantError(t, http.StatusBadRequest, dockettype.CodeInvalidRequest)
	})
}
