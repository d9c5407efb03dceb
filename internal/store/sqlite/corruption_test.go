package sqlite_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	_ "modernc.org/sqlite"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/store/sqlite"
	"github.com/docket-dev/docket/internal/storefailure"
)

// CorruptTasksPage writes garbage over the root page of the tasks table of
// the SQLite file at path (the database must be closed): what a damaged
// disk does to a page in the middle of a file. The schema and the
// migration records stay readable, so the store still opens.
func corruptTasksPage(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	var root, pageSize int64
	if err := db.QueryRow("SELECT rootpage FROM sqlite_master WHERE type = 'table' AND name = 'tasks'").Scan(&root); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow("PRAGMA page_size").Scan(&pageSize); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(bytes.Repeat([]byte{0xa5}, int(pageSize)), (root-1)*pageSize); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// A damaged page is an internal failure carrying SQLite's code, never an
// outage to retry, and from then on Ping reports the store corrupt.
func TestCorruptPageIsInternalAndPingSaysSo(t *testing.T) {
	path := filepath.Join(t.TempDir(), "docket.db")
	st, err := sqlite.Open(t.Context(), path, sqlite.Options{Synchronous: "normal"})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 10, 12, 9, 0, 0, 0, time.UTC)
	id := uuid.Must(uuid.NewV7()).String()
	_, err = st.Admit(t.Context(), &store.AdmitParams{Now: now, Items: []*store.AdmitItem{{
		TaskID: id, Tenant: "acme", Author: "a", IdempotencyKey: "k", RequestHash: "h", Workflow: "demo.echo",
		Pool: dockettype.PoolOnline, MaxAttempts: 1, DeadlineAt: now.Add(time.Hour), TraceID: "t", ConfigVersion: "v",
		Input: []byte(`{"text":"hello"}`),
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	corruptTasksPage(t, path)

	st, err = sqlite.Open(t.Context(), path, sqlite.Options{Synchronous: "normal"})
	if err != nil {
		t.Fatalf("open with a damaged tasks page: %v, want it to open (the damage is found when read)", err)
	}
	defer st.Close()
	if err := st.Ping(t.Context()); err != nil {
		t.Fatalf("Ping before any read of the damaged page: %v", err)
	}

	_, err = st.GetTask(t.Context(), &store.GetTaskParams{Tenant: "acme", TaskID: id})
	if !errors.Is(err, store.ErrCorrupt) || errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("GetTask on a damaged page = %v, want store.ErrCorrupt and not unavailable", err)
	}
	c := storefailure.Classify(err)
	code, _ := strconv.Atoi(c.DBCode)
	if c.Code != dockettype.CodeInternal || c.Backend != store.BackendSQLite || (code&0xff != 11 && code&0xff != 26) {
		t.Errorf("classified as %+v, want internal with SQLite's corrupt code (11 or 26, or an extended code of them)", c)
	}
	t.Logf("SQLite code %s", c.DBCode)
	if c.Transient() {
		t.Error("a damaged page is classified transient: a client would be told to retry")
	}
	if err := st.Ping(t.Context()); !errors.Is(err, store.ErrCorrupt) {
		t.Errorf("Ping after a read found the damage = %v, want store.ErrCorrupt", err)
	}
	// Forks share what the store found.
	f, err := st.Fork("api", store.ForkOptions{MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Ping(context.Background()); !errors.Is(err, store.ErrCorrupt) {
		t.Errorf("a fork's Ping = %v, want store.ErrCorrupt", err)
	}
}
