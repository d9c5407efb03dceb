// Package engine is Docket's task state machine, written once for every SQL
// backend. A backend (sqlite, postgres) supplies a Backend: its connections,
// its transactions, its error mapping and the SQL of each step. The engine
// composes those steps into the store.Store operations that change tasks:
// admission decisions against capacity and tenant limits, the fair claim
// plan, fenced transitions, the append-only history, the in-flight counters
// and the ready counts that fair dispatch reads.
//
// The plain operations (reads, scans, stats, admin, rule sets, workflows,
// workers) are written here once too, over a connection the backend holds
// for them (Backend.Read, Backend.Update, the Querier) in the SQL both
// databases read alike; Dialect holds the few statements that differ. A
// backend keeps its SQL, its connections and their limits (a wait for a
// connection of a saturated pool is store.ErrBusy, see Busy), and its error
// mapping (ErrorMap), and decides nothing the engine could.
//
//	b, err := sqlite.OpenBackend(ctx, path, opts) // a Backend
//	st := engine.New(b)                          // a store.Store
//
// # Tables
//
// Both backends keep the same tables:
//
//   - tasks: what was admitted, with its input. Immutable (a trigger
//     refuses updates).
//   - task_queue: the live tasks (queued or running) with their lease. A
//     task leaves it in the transaction that makes it terminal, so the
//     indexes every claim, recovery and deadline scan reads stay as small
//     as the live work, whatever the history holds.
//   - task_results: one row per terminal task: state, result, error.
//   - task_events: the append-only history, one row per transition.
//   - counters: in-flight (non-terminal) tasks per pool and per tenant.
//   - tenant_queues: per pool and tenant, the ready count and the virtual
//     time of stride scheduling.
//
// # Counters without a hot row
//
// Capacity and tenant limits are exact: admission locks the gate row (slot
// 0) of each pool and tenant it admits to, reads the sum of all slots, and
// adds what it admitted to slot 0. Only admissions take gate locks, so they
// serialize per pool (as exact capacity requires) in one short transaction
// per batch. Releases, in the transaction that makes a task terminal, go to
// another slot (a backend with concurrent writers picks one of several), so
// finishing work never waits for admission and admission never waits for
// finishing work. A release that is not yet committed is not seen by an
// admission; it sees a count that is too high, never too low, so capacity is
// never exceeded.
//
// # Lock order
//
// Task rows (in ID order), then gate rows, then tenant_queues rows, then
// release slots, each set in sorted order. An admission's own new rows
// (bindings in key order, tasks) come before its gate rows when the backend
// reads gates without locks (GateReader), after them otherwise. A claim locks tasks only with
// SKIP LOCKED, so it never waits on a task row.
package engine
