package httpapi_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	_ "modernc.org/sqlite"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/httpapi/httpapitest"
	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/store/engine"
	"github.com/docket-dev/docket/internal/store/sqlite"
)

// A damaged SQLite page: the read that finds it is 500 internal (logged
// with SQLite's code, never its text), and from then on /readyz is 503
// store_corrupt.
func TestReadyzReportsACorruptStore(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "d.db")
	st, err := sqlite.Open(context.Background(), path, sqlite.Options{Synchronous: "normal"})
	if err != nil {
		t.Fatal(err)
	}
	s := httpapitest.New(t, httpapitest.Options{Store: st, Queue: queuedOnly})
	task := mustSubmit(t, s.URL, s.Key, "k", echoBody)
	key := s.Key
	s.Close()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	overwriteRootPage(t, path, "tasks")

	st, err = sqlite.Open(context.Background(), path, sqlite.Options{Synchronous: "normal"})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })
	s = httpapitest.New(t, httpapitest.Options{Store: st, Queue: queuedOnly})
	call(t, s.URL, request{method: http.MethodGet, path: "/readyz"}).wantStatus(t, http.StatusOK)

	call(t, s.URL, request{method: http.MethodGet, path: "/v1/tasks/" + task.ID, key: key}).
		wantError(t, http.StatusInternalServerError, dockettype.CodeInternal)
	call(t, s.URL, request{method: http.MethodGet, path: "/readyz"}).
		wantError(t, http.StatusServiceUnavailable, dockettype.CodeStoreCorrupt)

	logs := s.Logs.String()
	if !strings.Contains(logs, `"db_code":"11"`) {
		t.Errorf("no log line carries SQLite's code 11:\n%s", logs)
	}
	if strings.Contains(strings.ToLower(logs), "malformed") {
		t.Errorf("a log line carries SQLite's text:\n%s", logs)
	}
}

// overwriteRootPage writes garbage over the first page of a table of the
// closed SQLite file at path.
func overwriteRootPage(t *testing.T, path, table string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	var root, pageSize int64
	if err := db.QueryRow("SELECT rootpage FROM sqlite_master WHERE type = 'table' AND name = ?", table).Scan(&root); err != nil {
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
	defer f.Close()
	if _, err := f.WriteAt(bytes.Repeat([]byte{0xa5}, int(pageSize)), (root-1)*pageSize); err != nil {
		t.Fatal(err)
	}
}

// fullDisk is a backend whose writes fail while full is set, as SQLite's
// do on a full disk (SQLITE_FULL: store.ErrUnavailable) while its reads
// still succeed.
type fullDisk struct {
	engine.Backend
	full *atomic.Bool
}

func (d *fullDisk) fail(op string) error {
	return &store.OpError{Op: op, Err: fmt.Errorf("%w: disk full", store.ErrUnavailable)}
}

func (d *fullDisk) Write(ctx context.Context, op string, fn func(tx engine.Tx) error) error {
	if d.full.Load() {
		return d.fail(op)
	}
	return d.Backend.Write(ctx, op, fn)
}

func (d *fullDisk) Update(ctx context.Context, op string, fn func(q engine.Querier) error) error {
	if d.full.Load() {
		return d.fail(op)
	}
	return d.Backend.Update(ctx, op, fn)
}

func (d *fullDisk) Fork(name string, opts store.ForkOptions) (engine.Backend, error) {
	f, err := d.Backend.Fork(name, opts)
	if err != nil {
		return nil, err
	}
	return &fullDisk{Backend: f, full: d.full}, nil
}

// While writes fail and reads succeed, /readyz is 503 writes_failing, on
// an idle node too (the periodic write probe finds it); once the disk has
// room again, the next probe makes it ready.
func TestReadyzReportsFailingWrites(t *testing.T) {
	t.Parallel()
	b, err := sqlite.OpenBackend(context.Background(), filepath.Join(t.TempDir(), "d.db"), sqlite.Options{Synchronous: "normal"})
	if err != nil {
		t.Fatal(err)
	}
	full := &atomic.Bool{}
	st := engine.New(&fullDisk{Backend: b, full: full})
	t.Cleanup(func() { _ = st.Close() })
	clock := clockwork.NewFakeClock()
	cfg := queuedOnly
	cfg.Clock = clock
	cfg.ReadyProbeInterval = 10 * time.Second
	s := httpapitest.New(t, httpapitest.Options{Store: st, Queue: cfg})
	readyz := func() response { return call(t, s.URL, request{method: http.MethodGet, path: "/readyz"}) }
	readyz().wantStatus(t, http.StatusOK)

	// The disk fills while the node is idle: ready until the probe is due.
	full.Store(true)
	readyz().wantStatus(t, http.StatusOK)
	clock.Advance(10 * time.Second)
	readyz().wantError(t, http.StatusServiceUnavailable, dockettype.CodeWritesFailing)
	submit(t, s.URL, s.Key, "k", echoBody).wantError(t, http.StatusServiceUnavailable, dockettype.CodeStoreUnavailable)
	readyz().wantError(t, http.StatusServiceUnavailable, dockettype.CodeWritesFailing)

	// Room again: the probe, every second while writes fail, clears it.
	full.Store(false)
	readyz().wantError(t, http.StatusServiceUnavailable, dockettype.CodeWritesFailing)
	clock.Advance(time.Second)
	readyz().wantStatus(t, http.StatusOK)
	mustSubmit(t, s.URL, s.Key, "k", echoBody)

	// A failed write on a busy node shows at once, without waiting for a
	// probe.
	full.Store(true)
	submit(t, s.URL, s.Key, "k2", echoBody).wantError(t, http.StatusServiceUnavailable, dockettype.CodeStoreUnavailable)
	readyz().wantError(t, http.StatusServiceUnavailable, dockettype.CodeWritesFailing)
}
