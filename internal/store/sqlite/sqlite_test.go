package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/store/engine"
	"github.com/docket-dev/docket/internal/store/sqlite"
	"github.com/docket-dev/docket/internal/store/storetest"
)

func open(t testing.TB) *engine.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "docket.db"), sqlite.Options{Synchronous: "normal"})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return open(t) })
}

func TestBackend(t *testing.T) {
	storetest.RunBackend(t, func(t *testing.T) engine.Backend {
		b, err := sqlite.OpenBackend(t.Context(), filepath.Join(t.TempDir(), "docket.db"), sqlite.Options{Synchronous: "normal"})
		if err != nil {
			t.Fatal(err)
		}
		return b
	})
}

// A transaction whose context ends midway fails with the context's error,
// whatever its statements then report: database/sql rolls the transaction
// back when the context ends, and the next statement sees sql.ErrTxDone. A
// pool's claim cut short by Stop was counted and logged as an internal
// database error (code "unknown") before.
func TestWriteCutShortFailsWithTheContextsError(t *testing.T) {
	b, err := sqlite.OpenBackend(context.Background(), filepath.Join(t.TempDir(), "docket.db"), sqlite.Options{Synchronous: "normal"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })

	ctx, cancel := context.WithCancel(t.Context())
	err = b.Write(ctx, "claim", func(engine.Tx) error {
		cancel()
		return fmt.Errorf("a step: %w", sql.ErrTxDone)
	})
	var dbErr *store.DatabaseError
	if !errors.Is(err, context.Canceled) || errors.As(err, &dbErr) {
		t.Errorf("Write cut short by its context = %v, want context.Canceled and no database error", err)
	}

	// With the context alive the same failure is the database's.
	err = b.Write(t.Context(), "claim", func(engine.Tx) error {
		return fmt.Errorf("a step: %w", sql.ErrTxDone)
	})
	if errors.Is(err, context.Canceled) || !errors.As(err, &dbErr) {
		t.Errorf("Write failing with a live context = %v, want a database error", err)
	}
}
