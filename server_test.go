package docket_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docket-dev/docket"
	"github.com/docket-dev/docket/client"
	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/defaults"
	"github.com/docket-dev/docket/internal/logtest"
	"github.com/docket-dev/docket/internal/quality"
	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/store/storeopen"
	"github.com/docket-dev/docket/workflow"
)

// startServer runs a demo server on a temporary SQLite file with cfg's
// other fields, and returns it with the demo (admin) key.
func startServer(t *testing.T, cfg docket.Config) (*docket.Server, string) {
	t.Helper()
	logger, _ := logtest.New(t)
	if cfg.DB == "" {
		cfg.DB = filepath.Join(t.TempDir(), "docket.db")
	}
	cfg.Listen, cfg.Logger = "127.0.0.1:0", logger
	srv, err := docket.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	key, err := srv.Bootstrap(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop() })
	return srv, key
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The SQLite database and its -wal and -shm files are readable by their
// owner only: they hold every tenant's inputs and the key hashes.
func TestSQLiteFilesAreOwnerOnly(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "docket.db")
	st, err := storeopen.Open(context.Background(), db, storeopen.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.EnsureTenant(context.Background(), &store.EnsureTenantParams{ID: "acme"}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{db, db + "-wal", db + "-shm"} {
		fi, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		if mode := fi.Mode().Perm(); mode != 0o600 {
			t.Errorf("%s has mode %v, want 0600", filepath.Base(name), mode)
		}
	}
}

// The busy-workers gauge counts a running task; /healthz names the version.
func TestPoolGaugesAndVersion(t *testing.T) {
	t.Parallel()
	started, release := make(chan struct{}), make(chan struct{})
	reg := workflow.NewRegistry()
	err := reg.Register("test.block", workflow.Definition{Pool: dockettype.PoolOnline,
		Run: func(ctx context.Context, _ *workflow.Binding, _ json.RawMessage) (json.RawMessage, error) {
			close(started)
			<-release
			return json.RawMessage(`{}`), nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	srv, key := startServer(t, docket.Config{Workflows: reg, OnlineWorkers: 3, OfflineWorkers: 2})
	if _, err := client.New(srv.URL(), key).Submit(context.Background(), &client.SubmitParams{IdempotencyKey: "b", Workflow: "test.block"}); err != nil {
		t.Fatal(err)
	}
	<-started
	metrics := get(t, srv.URL()+"/metrics")
	close(release)
	for _, want := range []string{
		`docket_pool_workers{pool="online"} 3`, `docket_pool_busy_workers{pool="online"} 1`,
		`docket_pool_workers{pool="offline"} 2`, `docket_pool_busy_workers{pool="offline"} 0`,
		`docket_http_open_connections `,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if got, want := strings.TrimSpace(get(t, srv.URL()+"/healthz")), `{"status":"ok","version":"`+docket.Version()+`"}`; got != want {
		t.Errorf("healthz = %s, want %s", got, want)
	}
}

// A tenant created on first use gets the default in-flight limit; 0 takes
// the default, Unlimited (< 0) is unlimited; the admin API creates tenants
// with it too.
func TestDefaultTenantLimit(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ cfg, want int }{{0, defaults.TenantLimit}, {5, 5}, {-1, 0}} {
		db := filepath.Join(t.TempDir(), "docket.db")
		srv, key := startServer(t, docket.Config{DB: db, DefaultTenantLimit: tt.cfg})
		req, _ := http.NewRequest(http.MethodPatch, srv.URL()+"/v1/admin/tenants/newco", strings.NewReader(`{"weight":2}`))
		req.Header.Set("Authorization", "Bearer "+key) // the demo key is an admin key
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var newco struct {
			MaxInFlight int `json:"max_in_flight"`
		}
		json.NewDecoder(resp.Body).Decode(&newco)
		resp.Body.Close()
		st, err := storeopen.Open(context.Background(), db, storeopen.Options{})
		if err != nil {
			t.Fatal(err)
		}
		demo, err := st.GetTenant(context.Background(), "demo")
		st.Close()
		if err != nil || demo.MaxInFlight != tt.want || resp.StatusCode != http.StatusOK || newco.MaxInFlight != tt.want {
			t.Errorf("DefaultTenantLimit %d: demo %+v (%v), newco %d (HTTP %d); want limit %d",
				tt.cfg, demo, err, newco.MaxInFlight, resp.StatusCode, tt.want)
		}
	}
}

// The HTTP API page's code table (docs/http-api.md, linked from the
// README) lists every code of the closed set.
func TestDocsListEveryCode(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("docs/http-api.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range dockettype.Codes {
		if !strings.Contains(string(readme), "| `"+string(c)+"` |") {
			t.Errorf("docs/http-api.md's code table lacks %s", c)
		}
	}
}

// NoDemoWorkflows drops demo.echo, demo.sleep and demo.fail from demo mode;
// quality.evaluate (on the seed rules) and the program's own workflows stay.
func TestNoDemoWorkflows(t *testing.T) {
	t.Parallel()
	reg := workflow.NewRegistry()
	err := reg.Register("test.own", workflow.Definition{Pool: dockettype.PoolOnline,
		Run: func(context.Context, *workflow.Binding, json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`"mine"`), nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	srv, key := startServer(t, docket.Config{Workflows: reg, NoDemoWorkflows: true, OfflineWorkers: docket.NoWorkers})
	c := client.New(srv.URL(), key)
	for _, name := range []string{"demo.echo", "demo.sleep", "demo.fail"} {
		_, err := c.Submit(context.Background(), &client.SubmitParams{IdempotencyKey: name, Workflow: name})
		if !client.IsCode(err, dockettype.CodeUnknownWorkflow) {
			t.Errorf("%s with NoDemoWorkflows: %v, want unknown_workflow", name, err)
		}
	}
	for _, name := range []string{"test.own", "quality.evaluate"} {
		res, err := c.Submit(context.Background(), &client.SubmitParams{IdempotencyKey: name, Workflow: name, Input: json.RawMessage(`{"text":"hi"}`)})
		if err != nil {
			t.Errorf("%s with NoDemoWorkflows: %v, want it admitted", name, err)
			continue
		}
		if name == "quality.evaluate" && res.Task.ConfigVersion != "seed-1" {
			t.Errorf("quality.evaluate pinned %q, want the seed rules", res.Task.ConfigVersion)
		}
	}
}

// Retention takes its default when zero, so the cleaner runs; Unlimited
// keeps finished tasks, and no cleaner runs.
func TestRetentionDefaultAndUnlimited(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		retention   time.Duration
		wantCleaner bool
	}{{0, true}, {docket.Unlimited, false}} {
		srv, _ := startServer(t, docket.Config{Retention: tt.retention})
		metrics := get(t, srv.URL()+"/metrics")
		if got := strings.Contains(metrics, `docket_scheduler_lag_seconds{scheduler="cleaner"}`); got != tt.wantCleaner {
			t.Errorf("Retention %v: cleaner running %v, want %v", tt.retention, got, tt.wantCleaner)
		}
	}
}

// The rule set the pilot walkthrough (docs/configuration.md) publishes is in the
// repository, and `docket rules publish` accepts it.
func TestExampleRulesParse(t *testing.T) {
	t.Parallel()
	body, err := os.ReadFile("examples/rules.json")
	if err != nil {
		t.Fatal(err)
	}
	rs, err := quality.Parse(body)
	if err != nil {
		t.Fatalf("examples/rules.json: %v", err)
	}
	readme, err := os.ReadFile("docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "./docket rules publish examples/rules.json") {
		t.Errorf("the pilot walkthrough in docs/configuration.md does not publish examples/rules.json")
	}
	// The reply the walkthrough submits passes every rule, as it says.
	reference := "When will my order 1042 arrive?"
	rep := quality.Evaluate(rs, quality.Input{Text: "Hello Ada, your order 1042 has shipped and arrives on Friday.", Reference: &reference})
	if rep.Verdict != quality.VerdictPass || rep.Passed != 5 {
		t.Errorf("the walkthrough's reply: %+v, want a pass on all 5 rules", rep)
	}
}
