package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"strings"
	"sync"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/store/engine"
)

// Options tunes the embedded store. The zero value is the durable default.
type Options struct {
	// Synchronous is SQLite's synchronous setting: "full" (default: every
	// commit is fsync'd, surviving power loss) or "normal" (survives a
	// process crash; a power loss may lose the last commits).
	Synchronous string
	// ReadConns bounds the read pool; default 4.
	ReadConns int
	// BusyTimeoutMS is how long a writer from another process (an admin
	// command) waits for the lock; default 5000.
	BusyTimeoutMS int
	// AllowForeign installs Docket's tables in a file that holds other
	// tables and no Docket migration record; without it such a file is
	// refused (migration.ErrForeignDatabase).
	AllowForeign bool
}

// Open opens (creating if needed) the database at path, applies pending
// migrations and returns the store.
func Open(ctx context.Context, path string, opts Options) (*engine.Store, error) {
	return engine.Open(OpenBackend(ctx, path, opts))
}

// Backend is the SQLite engine.Backend.
type Backend struct {
	path  string
	opts  Options
	w     *sql.DB     // the writer pool (shared by forks); see stmtCache
	stmts *stmtCache  // prepared write statements (shared by forks)
	gate  *writeGate  // one write transaction at a time (shared by forks)
	notes *localNotes // committed transactions' notifications (shared by forks)
	bg    bool        // this handle's writes are background (ForkOptions.Background)
	r     *sql.DB     // this handle's read pool
	own   bool        // whether Close closes the writer
	once  sync.Once
}

var _ engine.Backend = (*Backend)(nil)

// OpenBackend opens and migrates the database; Open wraps it in the engine.
func OpenBackend(ctx context.Context, path string, opts Options) (*Backend, error) {
	if opts.Synchronous == "" {
		opts.Synchronous = "full"
	}
	if opts.Synchronous != "full" && opts.Synchronous != "normal" {
		return nil, fmt.Errorf("sqlite: synchronous must be full or normal, not %q", opts.Synchronous)
	}
	if opts.ReadConns <= 0 {
		opts.ReadConns = 4
	}
	if opts.BusyTimeoutMS <= 0 {
		opts.BusyTimeoutMS = 5000
	}
	if err := createPrivate(path); err != nil {
		return nil, err
	}
	w, err := sql.Open("sqlite", dsn(path, opts, true))
	if err != nil {
		return nil, fmt.Errorf("sqlite: open: %w", err)
	}
	w.SetMaxOpenConns(2) // one transaction at a time (the gate); the other prepares
	w.SetMaxIdleConns(2)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	s := &Backend{path: path, opts: opts, w: w, stmts: newStmtCache(w), gate: newWriteGate(), notes: newLocalNotes(), own: true}
	if err := migrate(ctx, s, opts.AllowForeign); err != nil {
		w.Close()
		return nil, err
	}
	if s.r, err = openReader(path, opts, opts.ReadConns); err != nil {
		w.Close()
		return nil, err
	}
	if err := s.r.PingContext(ctx); err != nil {
		s.Close()
		return nil, interpretError("ping", err)
	}
	return s, nil
}

// createPrivate creates a missing database file readable and writable by
// its owner only: it holds every tenant's inputs and the key hashes. SQLite
// gives the -wal and -shm files it creates next to it the database file's
// mode. An existing file keeps its mode.
func createPrivate(path string) error {
	if path == "" || strings.HasPrefix(path, ":") || strings.HasPrefix(path, "file:") {
		return nil // in-memory or URI names: SQLite decides
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("sqlite: create the database file: %w", err)
	}
	return f.Close()
}

func dsn(path string, opts Options, writer bool) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", opts.BusyTimeoutMS))
	q.Add("_pragma", "foreign_keys(1)")
	// Memory is bounded by the page caches, whatever the database holds:
	// no memory map (mapped pages count in the process's resident set, up
	// to the whole file), 16 MiB for each writer connection and 2 MiB for
	// each reader. The hot pages are few: claims read the front of each
	// tenant's part of the claim index, admissions append, and live tasks
	// have their own small table. Misses are reads from the OS page cache.
	q.Add("_pragma", "mmap_size(0)")
	if writer {
		q.Add("_pragma", "cache_size(-16384)")
		q.Add("_pragma", "journal_mode(WAL)")
		q.Add("_pragma", "synchronous("+strings.ToUpper(opts.Synchronous)+")")
		q.Set("_txlock", "immediate")
	} else {
		q.Add("_pragma", "cache_size(-2048)")
		q.Add("_pragma", "query_only(1)")
	}
	return "file:" + path + "?" + q.Encode()
}

func openReader(path string, opts Options, conns int) (*sql.DB, error) {
	r, err := sql.Open("sqlite", dsn(path, opts, false))
	if err != nil {
		return nil, fmt.Errorf("sqlite: open reader: %w", err)
	}
	r.SetMaxOpenConns(conns)
	r.SetMaxIdleConns(conns)
	return r, nil
}

// Fork returns a handle with its own read pool of opts.MaxConns
// connections, sharing this store's writer; a Background fork's writes yield
// to foreground ones at the write gate.
func (s *Backend) Fork(name string, opts store.ForkOptions) (engine.Backend, error) {
	r, err := openReader(s.path, s.opts, max(opts.MaxConns, 1))
	if err != nil {
		return nil, err
	}
	return &Backend{path: s.path, opts: s.opts, w: s.w, stmts: s.stmts, gate: s.gate, notes: s.notes, bg: opts.Background, r: r}, nil
}

// Close closes this handle's read pool and, for the handle Open returned,
// the writer.
func (s *Backend) Close() error {
	var err error
	s.once.Do(func() {
		if s.r != nil {
			err = s.r.Close()
		}
		if s.own {
			s.stmts.close()
			if werr := s.w.Close(); err == nil {
				err = werr
			}
		}
	})
	return err
}

// Write runs fn in an immediate write transaction behind the write gate.
func (s *Backend) Write(ctx context.Context, op string, fn func(tx engine.Tx) error) error {
	var notes []store.Notification
	err := s.write(ctx, op, func(tx *wtx) error {
		t := &txn{ctx: ctx, tx: tx}
		err := fn(t)
		notes = t.notes
		return err
	})
	if err == nil {
		s.notes.publish(notes)
	}
	return err
}

// write runs fn in an immediate write transaction behind the write gate.
func (s *Backend) write(ctx context.Context, op string, fn func(tx *wtx) error) error {
	if err := s.gate.acquire(ctx, s.bg); err != nil {
		return interpretError(op, err)
	}
	defer s.gate.release()
	sqlTx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return interpretError(op, err)
	}
	tx := &wtx{Tx: sqlTx, cache: s.stmts}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return interpretError(op, cutShort(ctx, err))
	}
	if err := tx.Commit(); err != nil {
		return interpretError(op, cutShort(ctx, err))
	}
	return nil
}

// cutShort blames a failed transaction on its context when the context has
// ended: database/sql rolls the transaction back as soon as the context
// ends, and the statements after that fail with sql.ErrTxDone or an
// interruption rather than the context's error. A caller that stopped
// (a pool's claim at shutdown) must not see that as a database error.
func cutShort(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("%w (%w)", cerr, err)
	}
	return err
}
