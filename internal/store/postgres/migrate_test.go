package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/docket-dev/docket/internal/store/migration"
	"github.com/docket-dev/docket/internal/store/postgres"
	"github.com/docket-dev/docket/internal/store/postgres/pgtest"
	"github.com/docket-dev/docket/internal/store/storetest"
)

// foreignSchema makes a schema holding another application's tables.
func foreignSchema(t *testing.T, url string, tables ...string) string {
	t.Helper()
	schema := pgtest.Schema(t, url)
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	if _, err := conn.Exec(t.Context(), "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	for _, name := range tables {
		if _, err := conn.Exec(t.Context(), "CREATE TABLE "+pgx.Identifier{schema, name}.Sanitize()+" (id int PRIMARY KEY)"); err != nil {
			t.Fatal(err)
		}
	}
	return schema
}

// A schema that holds another application's tables, none of whose names
// Docket uses, is refused, saying what was found and how to install
// anyway; with AllowForeign Docket installs beside them.
func TestMigrateRefusesAForeignSchema(t *testing.T) {
	url := pgtest.URL(t)
	schema := foreignSchema(t, url, "customers", "orders", "invoices")
	_, err := postgres.Open(t.Context(), url, postgres.Options{Schema: schema})
	if !errors.Is(err, migration.ErrForeignDatabase) {
		t.Fatalf("open a foreign schema: %v, want ErrForeignDatabase", err)
	}
	t.Logf("refusal: %v", err)
	for _, want := range []string{`schema "` + schema + `" has 3 tables (customers, invoices, orders)`, "no docket_schema_migrations table", "--allow-foreign-database"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not say %q", err, want)
		}
	}
	st, err := postgres.Open(t.Context(), url, postgres.Options{Schema: schema, AllowForeign: true})
	if err != nil {
		t.Fatalf("open with AllowForeign: %v", err)
	}
	st.Close()
	st, err = postgres.Open(t.Context(), url, postgres.Options{Schema: schema})
	if err != nil {
		t.Fatalf("reopen the Docket installation: %v", err)
	}
	st.Close()
}

// A failed migration names itself and the SQLSTATE with its meaning, never
// the server's text.
func TestMigrateFailureNamesTheMigrationAndCode(t *testing.T) {
	url := pgtest.URL(t)
	schema := foreignSchema(t, url, "tasks")
	_, err := postgres.Open(t.Context(), url, postgres.Options{Schema: schema, AllowForeign: true})
	t.Logf("clash: %v", err)
	if err == nil || !strings.Contains(err.Error(), "migration 001_schema.sql failed: postgres error 42P07 (duplicate_table") {
		t.Errorf("clashing table: %v, want the migration and SQLSTATE named", err)
	}
	if err != nil && strings.Contains(err.Error(), "already exists") {
		t.Errorf("the error carries the server's text: %v", err)
	}
}

// The storage-quota migration counts what an upgraded database keeps.
func TestStorageQuotaMigrationCountsWhatIsKept(t *testing.T) {
	url := pgtest.URL(t)
	schema := pgtest.Schema(t, url)
	st := pgtest.Open(t, url, schema)
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(t.Context(), "SET search_path = "+pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	storetest.RunStorageBackfill(t, st, "migrations/009_storage_quota.sql", func(ctx context.Context, q string) error {
		_, err := conn.Exec(ctx, q, pgx.QueryExecModeSimpleProtocol)
		return err
	})
}
