// Package store defines the storage contract of the Docket queue core and the
// sentinel errors every backend maps its native errors onto.
//
// Backends live in sub-packages (sqlite, postgres) and are checked by one
// conformance suite (storetest). No backend type crosses this boundary.
//
// Every method that decides by time takes Now in its params; the queue core
// fills it from its injected clock so that tests can pin time.
//
// Fencing: every worker write (Finish, Heartbeat, AppendEvidence) names a
// Lease (task ID + lease epoch) and applies only while the task is running
// under that same epoch. A refused write is reported per item (or as
// ErrStaleLease for single-item calls) and changes nothing.
//
// Reservations: admission reserves one unit of the pool's capacity and one of
// the tenant's in-flight limit; the transaction that makes a task terminal
// releases both, exactly once.
package store
