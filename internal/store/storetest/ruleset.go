package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/docket-dev/docket/internal/store"
)

func publish(t *testing.T, s store.Store, now time.Time, hash string, body []byte) *store.RuleSet {
	t.Helper()
	rs, err := s.PublishRuleSet(t.Context(), &store.PublishRuleSetParams{Now: now, Hash: hash, Body: body})
	if err != nil {
		t.Fatalf("PublishRuleSet: %v", err)
	}
	return rs
}

func (su suite) testRuleSets(t *testing.T) {
	su.run(t, "Empty", func(t *testing.T, s store.Store) {
		_, err := s.LatestRuleSet(t.Context())
		wantErrIs(t, "LatestRuleSet with none published", err, store.ErrNotFound)
		list, err := s.ListRuleSets(t.Context())
		if err != nil || len(list) != 0 {
			t.Errorf("ListRuleSets = %v, %v; want none", list, err)
		}
	})

	su.run(t, "PublishAndRead", func(t *testing.T, s store.Store) {
		body1 := []byte(`{"rules": [{"id": "no_pii"}]}`)
		body2 := []byte(`{"rules": [{"id": "no_pii"}, {"id": "max_len", "max": 200}]}`)
		v1 := publish(t, s, at(0), "hash-1", body1)
		v2 := publish(t, s, at(time.Second), "hash-2", body2)
		if v1.Version != "v1" || v2.Version != "v2" {
			t.Fatalf("published versions %q, %q; want v1, v2", v1.Version, v2.Version)
		}

		list, err := s.ListRuleSets(t.Context())
		if err != nil {
			t.Fatalf("ListRuleSets: %v", err)
		}
		if len(list) != 2 || list[0].Version != "v1" || list[1].Version != "v2" {
			t.Fatalf("ListRuleSets = %v, want v1, v2 (oldest first)", list)
		}
		for i, want := range []struct {
			hash string
			at   time.Time
		}{{"hash-1", at(0)}, {"hash-2", at(time.Second)}} {
			if list[i].Hash != want.hash || list[i].Body != nil {
				t.Errorf("listed %s: hash %q body %q, want hash %q and no body", list[i].Version, list[i].Hash, list[i].Body, want.hash)
			}
			wantTime(t, "listed PublishedAt", list[i].PublishedAt, want.at)
		}

		got, err := s.GetRuleSet(t.Context(), "v1")
		if err != nil {
			t.Fatalf("GetRuleSet v1: %v", err)
		}
		if got.Version != "v1" || got.Hash != "hash-1" || !jsonEqual(got.Body, body1) {
			t.Errorf("GetRuleSet v1 = %s %s %s, want v1 hash-1 %s", got.Version, got.Hash, got.Body, body1)
		}
		latest, err := s.LatestRuleSet(t.Context())
		if err != nil {
			t.Fatalf("LatestRuleSet: %v", err)
		}
		if latest.Version != "v2" || latest.Hash != "hash-2" || latest.Body != nil {
			t.Errorf("LatestRuleSet = %s %s %s, want v2 hash-2 without its body", latest.Version, latest.Hash, latest.Body)
		}
		// The latest version's content is read by its version.
		if got, err := s.GetRuleSet(t.Context(), latest.Version); err != nil || !jsonEqual(got.Body, body2) {
			t.Errorf("GetRuleSet(latest) = %v, %v; want body %s", got, err, body2)
		}
		_, err = s.GetRuleSet(t.Context(), "v3")
		wantErrIs(t, "GetRuleSet of an unpublished version", err, store.ErrNotFound)
	})

	// Versions are numbers: v10 comes after v9, not after v1.
	su.run(t, "VersionsAreNumbered", func(t *testing.T, s store.Store) {
		body := []byte(`{"rules": []}`)
		for i := range 11 {
			// Identical content still makes a new version.
			publish(t, s, at(time.Duration(i)*time.Second), "same-hash", body)
		}
		list, err := s.ListRuleSets(t.Context())
		if err != nil {
			t.Fatalf("ListRuleSets: %v", err)
		}
		var got []string
		for _, rs := range list {
			got = append(got, rs.Version)
		}
		if want := "[v1 v2 v3 v4 v5 v6 v7 v8 v9 v10 v11]"; fmt.Sprint(got) != want {
			t.Errorf("ListRuleSets versions = %v, want %s", got, want)
		}
		latest, err := s.LatestRuleSet(t.Context())
		if err != nil || latest.Version != "v11" {
			t.Errorf("LatestRuleSet = %v, %v; want v11", latest, err)
		}
	})
}
