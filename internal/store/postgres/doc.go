// Package postgres is Docket's scaled-out store: any number of Docket nodes
// share one PostgreSQL database through jackc/pgx (pgxpool).
//
// Semantics are those of the SQLite store, checked by the same conformance
// suite (storetest). Concurrency is real here, so every write runs in a
// READ COMMITTED transaction that takes row locks in one global order:
//
//   - pools: the row of a pool is locked by every admission to it (its
//     in_flight counter is the transactional capacity check), by every claim
//     of it (which serializes claims across nodes and keeps the stride
//     bookkeeping exact), and by every transaction that changes its
//     reservation counter or its tenants' ready counts;
//   - then tenants, then tenant_queues, each in sorted order;
//   - task rows are locked in ID order before a batch changes them; claims
//     take tasks with FOR UPDATE SKIP LOCKED and never wait for one.
//
// A transaction PostgreSQL still aborts for a deadlock or a serialization
// failure is run again a few times before the error is reported as
// store.ErrUnavailable. Reads (scans, listings) run outside transactions,
// on a connection taken from the pool with the call's deadline: a wait
// that outlasts it while every connection is in use is store.ErrBusy.
//
// The backend implements store.Vacuumer: the queue's vacuum scheduler asks
// it to vacuum the live table (vacuum.go). Opening the store starts no
// goroutine.
//
// Open applies the embedded migrations under a transaction-scoped advisory
// lock, so nodes starting together migrate once. Options.Schema puts the
// tables in their own schema (created if missing).
//
//	s, err := postgres.Open(ctx, "postgres://docket@db/docket", postgres.Options{})
//	if err != nil { … }
//	defer s.Close()
//	recovery, err := s.Fork("recovery", store.ForkOptions{MaxConns: 2}) // its own connection budget
package postgres
