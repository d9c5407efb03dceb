package httpapi

import (
	"net/http"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// ruleSetBody is one published rule set version, without its body.
type ruleSetBody struct {
	Version     string    `json:"version"`
	Hash        string    `json:"hash"`
	PublishedAt time.Time `json:"published_at"`
}

type ruleSetsBody struct {
	RuleSets []ruleSetBody `json:"rule_sets"`
}

// listRuleSets serves GET /v1/admin/rules: every published quality rule set
// version, oldest first, without its rules (what `docket rules list`
// prints). Versions are published by hand, so the list stays short.
func (s *server) listRuleSets(w http.ResponseWriter, r *http.Request, _ dockettype.Principal) {
	if _, err := queryParams(r); err != nil {
		writeError(w, r, err)
		return
	}
	rs, err := s.adminStore.ListRuleSets(r.Context())
	if err != nil {
		writeError(w, r, s.adminStoreError(r.Context(), "list_rule_sets", err))
		return
	}
	writeJSON(w, r, http.StatusOK, ruleSetsBody{RuleSets: ruleSetsOf(rs)})
}

func ruleSetsOf(rs []*store.RuleSet) []ruleSetBody {
	out := make([]ruleSetBody, len(rs))
	for i, r := range rs {
		out[i] = ruleSetBody{Version: r.Version, Hash: r.Hash, PublishedAt: r.PublishedAt}
	}
	return out
}
