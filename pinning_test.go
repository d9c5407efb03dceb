package docket_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docket-dev/docket"
	"github.com/docket-dev/docket/client"
	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/auth"
	"github.com/docket-dev/docket/internal/logtest"
	"github.com/docket-dev/docket/internal/quality"
	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/store/storeopen"
)

func publish(t *testing.T, db, body string) *store.RuleSet {
	t.Helper()
	st, err := storeopen.Open(context.Background(), db, storeopen.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := quality.Parse([]byte(body)); err != nil {
		t.Fatal(err)
	}
	hash, err := quality.Hash([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	rs, err := st.PublishRuleSet(context.Background(), &store.PublishRuleSetParams{Now: time.Now(), Hash: hash, Body: []byte(body)})
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func pilot(t *testing.T, db string, offlineWorkers int) *docket.Server {
	t.Helper()
	logger, _ := logtest.New(t)
	srv, err := docket.New(context.Background(), docket.Config{
		DB: db, Listen: "127.0.0.1:0", Mode: docket.ModePilot, OfflineWorkers: offlineWorkers, Logger: logger,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return srv
}

// TestPilotPinsRuleSetVersion: a task admitted under v1 that runs only after
// v2 is published (here: after a restart) is still judged by v1, and its
// result and evidence say so; a task admitted after v2 pins v2. Demo
// workflows are not available in pilot mode.
func TestPilotPinsRuleSetVersion(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "docket.db")
	v1 := publish(t, db, `{"name":"v1","rules":[{"id":"short","kind":"length","max":10}]}`)
	st, err := storeopen.Open(ctx, db, storeopen.Options{})
	if err != nil {
		t.Fatal(err)
	}
	key, _, err := auth.CreateKey(ctx, st, time.Now(), "acme", "alice", dockettype.RoleMember)
	st.Close()
	if err != nil {
		t.Fatal(err)
	}

	// Node 1 admits but has no offline workers: the task waits.
	srv := pilot(t, db, -1)
	c := client.New(srv.URL(), key)
	text := json.RawMessage(`{"text":"this text is longer than ten characters ` + logtest.Canary + `"}`)
	res, err := c.Submit(ctx, &client.SubmitParams{IdempotencyKey: "q1", Workflow: "quality.evaluate", Input: text})
	if err != nil {
		t.Fatal(err)
	}
	if res.Task.ConfigVersion != v1.Version {
		t.Fatalf("admitted with config_version %q, want %q", res.Task.ConfigVersion, v1.Version)
	}
	_, err = c.Submit(ctx, &client.SubmitParams{IdempotencyKey: "d1", Workflow: "demo.echo"})
	if !client.IsCode(err, dockettype.CodeUnknownWorkflow) {
		t.Fatalf("demo.echo in pilot mode: %v, want unknown_workflow", err)
	}
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	// A more lenient v2 is published while the task waits.
	v2 := publish(t, db, `{"name":"v2","rules":[{"id":"long-ok","kind":"length","max":1000}]}`)
	srv = pilot(t, db, 2)
	defer srv.Shutdown(ctx)
	c = client.New(srv.URL(), key)
	task, err := c.Wait(ctx, res.Task.ID, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var result struct {
		Verdict       string `json:"verdict"`
		ConfigVersion string `json:"config_version"`
		RuleSetHash   string `json:"rule_set_hash"`
	}
	if task.State != dockettype.StateSucceeded || json.Unmarshal(task.Result, &result) != nil {
		t.Fatalf("task %s %s", task.State, task.Result)
	}
	if result.ConfigVersion != v1.Version || result.RuleSetHash != v1.Hash || result.Verdict != "fail" {
		t.Fatalf("result %+v: want judged by %s (%s) and failing its 10-character limit", result, v1.Version, v1.Hash)
	}
	evidence, err := c.Evidence(ctx, task.ID)
	if err != nil || len(evidence) != 1 {
		t.Fatalf("evidence %v %v, want one item (v1 has one rule)", evidence, err)
	}
	if !strings.Contains(string(evidence[0].Body), `"config_version":"`+v1.Version+`"`) || !strings.Contains(string(evidence[0].Body), `"rule_id":"short"`) {
		t.Fatalf("evidence %s does not name v1 and its rule", evidence[0].Body)
	}
	// New submissions pin the newest version.
	res2, err := c.Submit(ctx, &client.SubmitParams{IdempotencyKey: "q2", Workflow: "quality.evaluate", Input: text})
	if err != nil || res2.Task.ConfigVersion != v2.Version {
		t.Fatalf("new task pinned %q (%v), want %q", res2.Task.ConfigVersion, err, v2.Version)
	}
}
