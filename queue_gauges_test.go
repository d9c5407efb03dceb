package docket_test

import (
	"context"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/docket-dev/docket"
	"github.com/docket-dev/docket/client"
	"github.com/docket-dev/docket/internal/store/postgres/pgtest"
)

// postgresDB returns a URL of a fresh PostgreSQL schema (dropped when t
// ends), or skips t when no test database is set.
func postgresDB(t *testing.T) string {
	t.Helper()
	base := pgtest.URL(t)
	schema := pgtest.Schema(t, base)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	_, err = conn.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize())
	conn.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// /metrics shows the pools' queued, running, in-flight, capacity-in-use
// and oldest-queued-age gauges from the store, and each scheduler's lag,
// on both stores; no docket metric carries a tenant or task label.
func TestQueueGauges(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"sqlite", "postgres"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg := docket.Config{OnlineWorkers: -1, OfflineWorkers: -1, OnlineCapacity: 10, OfflineCapacity: 4}
			if name == "postgres" {
				cfg.DB = postgresDB(t)
			}
			srv, key := startServer(t, cfg)
			c := client.New(srv.URL(), key)
			for _, k := range []string{"a", "b"} {
				if _, err := c.Submit(context.Background(), &client.SubmitParams{IdempotencyKey: k, Workflow: "demo.echo"}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := c.Submit(context.Background(), &client.SubmitParams{IdempotencyKey: "q", Workflow: "quality.evaluate", Input: []byte(`{"text":"hi"}`)}); err != nil {
				t.Fatal(err)
			}
			metrics := get(t, srv.URL()+"/metrics")
			for _, want := range []string{
				`docket_pool_queued{pool="online"} 2`, `docket_pool_queued{pool="offline"} 1`,
				`docket_pool_running{pool="online"} 0`,
				`docket_pool_in_flight{pool="online"} 2`,
				`docket_pool_capacity{pool="online"} 10`,
				`docket_pool_capacity_in_use_ratio{pool="online"} 0.2`, `docket_pool_capacity_in_use_ratio{pool="offline"} 0.25`,
			} {
				if !strings.Contains(metrics, want) {
					t.Errorf("metrics lack %q", want)
				}
			}
			for _, gauge := range []string{
				`docket_pool_oldest_queued_age_seconds{pool="online"}`,
				`docket_scheduler_lag_seconds{scheduler="recovery"}`,
				`docket_scheduler_lag_seconds{scheduler="heartbeat"}`,
				`docket_scheduler_lag_seconds{scheduler="deadline"}`,
			} {
				m := regexp.MustCompile(regexp.QuoteMeta(gauge) + ` (\S+)`).FindStringSubmatch(metrics)
				if m == nil {
					t.Errorf("metrics lack %s", gauge)
					continue
				}
				if v, err := strconv.ParseFloat(m[1], 64); err != nil || v < 0 || v > 60 {
					t.Errorf("%s = %s, want a small number of seconds", gauge, m[1])
				}
			}
			label := regexp.MustCompile(`[{,](tenant|task|task_id)=`)
			for _, line := range strings.Split(metrics, "\n") {
				if strings.HasPrefix(line, "docket_") && label.MatchString(line) {
					t.Errorf("metric with a tenant or task label: %s", line)
				}
			}
		})
	}
}
