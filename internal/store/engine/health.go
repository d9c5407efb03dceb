package engine

import (
	"context"
	"encoding/binary"
	"errors"
	"sync/atomic"

	"github.com/docket-dev/docket/internal/store"
)

// health is what the store's calls taught about the database, shared by a
// store and its forks, for Ping (readiness): whether a call found the
// database damaged (sticky: damage does not heal) and whether writes fail.
type health struct {
	corrupt       atomic.Bool
	writesFailing atomic.Bool
	probes        atomic.Uint64 // the value of the next probe row
}

// observe records the outcome of a backend call. A write that failed for
// the database's sake (store.ErrUnavailable: a full disk, a read-only
// file, an unreachable database) sets writesFailing; a caller's
// cancellation, a stale lease or a busy pool says nothing about the disk.
func (h *health) observe(err error, write bool) {
	if err == nil {
		return
	}
	if errors.Is(err, store.ErrCorrupt) {
		h.corrupt.Store(true)
	}
	if write && errors.Is(err, store.ErrUnavailable) {
		h.writesFailing.Store(true)
	}
}

// watchedBackend is a Backend whose outcomes health observes.
type watchedBackend struct {
	Backend
	h *health
}

func (w *watchedBackend) Read(ctx context.Context, op string, fn func(q Querier) error) error {
	err := w.Backend.Read(ctx, op, fn)
	w.h.observe(err, false)
	return err
}

func (w *watchedBackend) Update(ctx context.Context, op string, fn func(q Querier) error) error {
	err := w.Backend.Update(ctx, op, fn)
	w.h.observe(err, true)
	return err
}

func (w *watchedBackend) Write(ctx context.Context, op string, fn func(tx Tx) error) error {
	err := w.Backend.Write(ctx, op, fn)
	w.h.observe(err, true)
	return err
}

// probeSQL writes the probe row: a new value each time, so that the write
// changes a page whatever the database optimizes away.
const probeSQL = "INSERT INTO settings (name, value) VALUES ('readiness_probe', $1) ON CONFLICT (name) DO UPDATE SET value = excluded.value"

// ProbeWrite writes the probe row in a transaction of its own; success
// clears writesFailing. See store.WriteProber.
func (s *Store) ProbeWrite(ctx context.Context) error {
	v := binary.BigEndian.AppendUint64(nil, s.health.probes.Add(1))
	err := s.b.Update(ctx, "probe_write", func(q Querier) error {
		_, err := q.Exec(probeSQL, v)
		return err
	})
	if err == nil {
		s.health.writesFailing.Store(false)
	}
	return err
}

// Ping checks that the database answers and holds Docket's schema, and
// reports what earlier calls found: damage (store.ErrCorrupt) first, then
// failing writes (store.ErrWritesFailing).
func (s *Store) Ping(ctx context.Context) error {
	_, err := read(ctx, s.b, "ping", func(q Querier) (struct{}, error) { return one(q, scanInto(new(int)), pingSQL) })
	switch {
	case s.health.corrupt.Load():
		return &store.OpError{Op: "ping", Err: store.ErrCorrupt}
	case err != nil:
		return err
	case s.health.writesFailing.Load():
		return &store.OpError{Op: "ping", Err: store.ErrWritesFailing}
	}
	return nil
}
