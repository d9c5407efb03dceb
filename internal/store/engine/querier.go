package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/docket-dev/docket/internal/store"
)

// Querier runs the statements of the engine's plain operations (reads,
// admin, rule sets, workflows, workers) on a connection a backend holds
// for it (see Backend.Read and Backend.Update). The SQL is the backends'
// common dialect: numbered parameters ($1, $2, …) and what both databases
// read alike; Dialect holds what differs. Arguments are strings, numbers,
// booleans, byte slices, nil pointers for NULL, and time.Time values, which
// a backend converts to the form its tables keep (SQLite: milliseconds
// since the epoch).
type Querier interface {
	Query(sql string, args ...any) (Rows, error)
	// Exec runs a statement and returns how many rows it changed.
	Exec(sql string, args ...any) (int64, error)
}

// Rows are a statement's rows, read like database/sql's.
type Rows interface {
	Row
	Next() bool
	Err() error
	Close()
}

// Row is one row to scan. Destinations are pointers to strings, numbers,
// booleans, byte slices, pointers of those (NULL: nil), or what At and
// AtOrNil return for timestamps.
type Row interface {
	Scan(dest ...any) error
}

// Dialect is the SQL of the plain operations that differs between the
// backends.
type Dialect struct {
	// OldestReady is the expression of Stats that reads the creation time
	// of the oldest first-in-line ready task of any tenant in a pool's
	// queues (NULL when none is ready): $1 the pool, $2 the LIKE pattern
	// of its remote queues.
	OldestReady string
	// Now reads the database's clock as a timestamp.
	Now string
	// AtMillis is the column at (a timestamp) as whole milliseconds
	// since the epoch.
	AtMillis string
	// LockRuleSets, when set, runs first in PublishRuleSet's transaction,
	// so that concurrent publishers number their versions one after the
	// other instead of colliding on the same number.
	LockRuleSets string
	// UpsertWorkers writes $1, a JSON array of workerRow objects, into
	// workers, keeping each row's latest sighting.
	UpsertWorkers string
	// Fires is the condition of a schedule that fires (not paused), as
	// the partial index schedules_due spells it.
	Fires string
	// IDsOf is a subquery of the strings of $1, a JSON array as text.
	IDsOf string
}

// waitShare is the share of a call's remaining time it may spend waiting
// for a connection of a backend's pool (see WaitContext).
const waitShare = 0.75

// WaitContext bounds a wait for a connection of a backend's pool to the
// first three quarters of the time ctx has left, so that a call that gets
// one has time left for its query. A call whose connection comes later is
// shed as busy (Busy) rather than started and cut off by its deadline mid
// query: under 2,500 concurrent reads of a large result, those were
// answered store_unavailable while the database was healthy.
func WaitContext(ctx context.Context) (context.Context, context.CancelFunc) {
	deadline, ok := ctx.Deadline()
	if !ok {
		return ctx, func() {}
	}
	// A context's deadline is wall-clock time: so is what is left of it.
	return context.WithTimeout(ctx, time.Duration(float64(time.Until(deadline))*waitShare))
}

// Busy makes the failure of a wait for a connection of a backend's pool
// store.ErrBusy when the wait ended with ctx's deadline while every
// connection was in use (saturated): the database is not at fault, and the
// call never reached it. Any other failure (the caller went away, a
// connection could not be opened) is returned as it is.
func Busy(ctx context.Context, err error, saturated bool) error {
	if err != nil && saturated && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%w: waiting for a connection: %w", store.ErrBusy, err)
	}
	return err
}

// all runs a query and scans each of its rows (see Collect).
func all[T any](q Querier, scan func(Row) (T, error), sql string, args ...any) ([]T, error) {
	rows, err := q.Query(sql, args...)
	if err != nil {
		return nil, err
	}
	return Collect(rows, scan)
}

// Collect scans each of rows and closes them; no row is an empty slice.
func Collect[T any](rows Rows, scan func(Row) (T, error)) ([]T, error) {
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// one runs a query and scans its first row; none is store.ErrNotFound.
func one[T any](q Querier, scan func(Row) (T, error), sql string, args ...any) (T, error) {
	var zero T
	rows, err := q.Query(sql, args...)
	if err != nil {
		return zero, err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return zero, err
		}
		return zero, store.ErrNotFound
	}
	return scan(rows)
}

// scanInto returns a scan function that reads a row into dest.
func scanInto(dest ...any) func(Row) (struct{}, error) {
	return func(r Row) (struct{}, error) { return struct{}{}, r.Scan(dest...) }
}

// read runs f on a read connection of b.
func read[T any](ctx context.Context, b Backend, op string, f func(q Querier) (T, error)) (T, error) {
	return on(ctx, b.Read, op, f)
}

// update runs f in a plain write transaction of b.
func update[T any](ctx context.Context, b Backend, op string, f func(q Querier) (T, error)) (T, error) {
	return on(ctx, b.Update, op, f)
}

// on runs f on the connection that run (Backend.Read or Backend.Update)
// holds, and returns what f made of it.
func on[T any](ctx context.Context, run func(context.Context, string, func(Querier) error) error, op string,
	f func(q Querier) (T, error)) (T, error) {
	var out T
	err := run(ctx, op, func(q Querier) (err error) {
		out, err = f(q)
		return err
	})
	return out, err
}

// timeDest scans a timestamp as either backend stores it: PostgreSQL's
// timestamptz or SQLite's milliseconds since the epoch, in UTC.
type timeDest struct {
	t    *time.Time
	null **time.Time // instead of t: NULL is nil
}

// At scans a timestamp into t.
func At(t *time.Time) any { return &timeDest{t: t} }

// AtOrNil scans a timestamp that may be NULL into t.
func AtOrNil(t **time.Time) any { return &timeDest{null: t} }

func (d *timeDest) Scan(v any) error {
	var t time.Time
	switch v := v.(type) {
	case nil:
		if d.null == nil {
			return errors.New("engine: NULL timestamp")
		}
		*d.null = nil
		return nil
	case time.Time:
		t = v.UTC()
	case int64:
		t = time.UnixMilli(v).UTC()
	default:
		return fmt.Errorf("engine: a %T is no timestamp", v)
	}
	if d.null != nil {
		*d.null = &t
	} else {
		*d.t = t
	}
	return nil
}
