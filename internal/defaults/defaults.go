// Package defaults is the one table of Docket's defaults: the value each
// setting of docket.Config and `docket serve` takes when it is not given.
// The queue, the HTTP API, the node and the CLI's flags all read it, so a
// default is written once and `docket serve --help` shows what the server
// uses.
//
// One convention holds for every setting, in docket.Config, the CLI's
// flags, queue.Config and httpapi.Options alike:
//
//   - zero means "use the default" (this table);
//   - Unlimited (-1) lifts a limit: a pool's capacity, a tenant's default
//     in-flight limit and storage quota, the long polls held at once, the
//     connections per remote address, the memory of request bodies, and
//     retention (keep finished tasks forever);
//   - NoWorkers (-1) gives a pool no workers on this node (it still
//     admits tasks, which other nodes run).
//
// Any negative value counts as Unlimited (or NoWorkers) where one is
// accepted. Settings for which neither makes sense (durations of
// schedulers, body sizes) take their default for zero and for negative
// values alike; the connection cap refuses a negative value.
//
//	if c.Capacity == 0 {
//		c.Capacity = defaults.Capacity
//	} // < 0: Unlimited
package defaults

import (
	"runtime/debug"
	"time"

	"github.com/docket-dev/docket/internal/dsn"
)

// Unlimited, given to a limit, removes it.
const Unlimited = -1

// NoWorkers, given to a pool's worker count, runs no workers for it on
// this node.
const NoWorkers = -1

// The node.
const (
	DB     = "./docket.db"    // SQLite file in the working folder
	Listen = "127.0.0.1:8080" // loopback only
	Mode   = "demo"           // frozen seed rules, demo workflows

	// SQLiteSynchronous is SQLite's durability: full fsyncs every commit.
	SQLiteSynchronous = "full"
)

// Pools. Workers are goroutines and most workflows wait on I/O, so the
// worker counts are generous; claims are sized by free workers.
const (
	OnlineWorkersPerCPU  = 32
	OfflineWorkersPerCPU = 8
	// Capacity is each pool's most non-terminal tasks, across all nodes.
	Capacity = 10000
)

// Leases and schedulers.
const (
	LeaseTTL = 30 * time.Second
	// HeartbeatsPerLease: the heartbeat interval is LeaseTTL divided by it.
	HeartbeatsPerLease = 3
	RecoveryInterval   = 5 * time.Second
	DeadlineInterval   = time.Second
	CleanerInterval    = time.Minute
	// ScheduleInterval is the schedule scheduler's period: a schedule's
	// task is admitted within about that of its fire time.
	ScheduleInterval = 250 * time.Millisecond
	// ScheduleGrace is how late a fire time may be handled and still be
	// on time; past it, the schedule's missed policy applies.
	ScheduleGrace = 10 * time.Second
	// Retention is how long finished tasks are kept.
	Retention = 7 * 24 * time.Hour
)

// Tasks.
const (
	// DefaultTimeout is the deadline of a task that names none.
	DefaultTimeout = 10 * time.Minute
	// MaxResultBytes bounds a workflow's result.
	MaxResultBytes = 1 << 20
	// ShutdownGrace is how long shutdown lets running tasks finish.
	ShutdownGrace = 10 * time.Second
)

// Tenants.
const (
	// TenantLimit is the in-flight limit of a tenant created on first use.
	TenantLimit = 1000
	// TenantStorageQuota is the bytes a tenant may keep (inputs, results
	// and evidence of its tasks, finished ones included until retention
	// deletes them) unless its own quota says otherwise: 1 GiB.
	TenantStorageQuota int64 = 1 << 30
)

// HTTP.
const (
	MaxBodyBytes   int64 = 1 << 20  // a request body, and each task of a batch
	MaxBatchBytes  int64 = 16 << 20 // the body of POST /v1/tasks/batch
	BodyTimeout          = 30 * time.Second
	MaxConnections       = 4096
	// MaxConnectionsPerIP bounds the open client connections of one
	// remote address (a reverse proxy is one address: lift it there).
	MaxConnectionsPerIP = 1024
	// MaxBodyMemory bounds the bytes of request bodies being read and
	// decoded at once on a node (16 batches of the largest size); with it
	// a node's memory stays under the bound docs/operations.md documents.
	MaxBodyMemory     int64 = 256 << 20
	MaxWaits                = 1000 // long polls held at once on a node
	MaxWaitsPerTenant       = 100  // long polls held at once per tenant on a node
)

// MemoryLimit is the soft memory limit (the Go runtime's, see
// runtime/debug.SetMemoryLimit) `docket serve` sets for a body budget of
// maxBodyMemory bytes, unless GOMEMLIMIT names one: three times the budget
// (bodies being decoded are held about twice over) plus 256 MiB for the
// rest of the server; 1 GiB for the default budget.
func MemoryLimit(maxBodyMemory int64) int64 {
	return 3*maxBodyMemory + 256<<20
}

// GCPercent is the garbage collector's target (GOGC) `docket serve` and
// the in-process `docket bench` set when GOGC is not set and a soft memory
// limit is in force (MemoryLimit, or GOMEMLIMIT's), which bounds the heap
// whatever the target. A node's live heap is a few megabytes while it
// allocates about 9 KB a task: at Go's default of 100, a PostgreSQL
// burn-down of 33,000 tasks a second collected 55 times a second, each
// time scanning the stacks of its 2,000 workers, and the collector was
// about a third of the node's CPU; at 400 it collects a quarter as often
// for a heap of a few tens of megabytes (BENCHMARKS.md).
const GCPercent = 400

// SoftMemoryLimit is the Go runtime's soft memory limit `docket serve`
// sets for a body budget of maxBodyMemory bytes (0: the default budget):
// MemoryLimit. None when the budget is unbounded or GOMEMLIMIT (gomemlimit)
// names a limit of its own.
func SoftMemoryLimit(maxBodyMemory int64, gomemlimit string) (int64, bool) {
	if gomemlimit != "" || maxBodyMemory < 0 {
		return 0, false
	}
	if maxBodyMemory == 0 {
		maxBodyMemory = MaxBodyMemory
	}
	return MemoryLimit(maxBodyMemory), true
}

// GCTarget is the collector's target `docket serve` sets (GCPercent):
// none when GOGC (gogc) names one or no soft memory limit bounds the heap.
func GCTarget(limited bool, gogc string) (int, bool) {
	if gogc != "" || !limited {
		return 0, false
	}
	return GCPercent, true
}

// TuneGC sets the Go runtime's soft memory limit for a body budget of
// maxBodyMemory bytes and, under it, the collector's target, as
// `docket serve` runs (and the in-process `docket bench` and the burn-down
// benchmarks with it), reading GOMEMLIMIT and GOGC through getenv. It
// returns what puts the previous settings back.
func TuneGC(maxBodyMemory int64, getenv func(string) string) (restore func()) {
	var undo []func()
	newLimit, limited := SoftMemoryLimit(maxBodyMemory, getenv("GOMEMLIMIT"))
	if limited {
		prev := debug.SetMemoryLimit(newLimit)
		undo = append(undo, func() { debug.SetMemoryLimit(prev) })
	}
	if target, ok := GCTarget(limited || getenv("GOMEMLIMIT") != "", getenv("GOGC")); ok {
		prev := debug.SetGCPercent(target)
		undo = append(undo, func() { debug.SetGCPercent(prev) })
	}
	return func() {
		for _, f := range undo {
			f()
		}
	}
}

// HeartbeatInterval is the default heartbeat interval for a lease TTL.
func HeartbeatInterval(leaseTTL time.Duration) time.Duration {
	return leaseTTL / HeartbeatsPerLease
}

// AdmitCommitters is how many admission transactions a node runs at once
// on db: two on PostgreSQL (the next group commit gathers while one
// commits), one on SQLite (one writer).
func AdmitCommitters(db string) int {
	if dsn.IsPostgres(db) {
		return 2
	}
	return 1
}

// StoredTenantLimit returns the in-flight limit a tenant created on first
// use is stored with, for a setting v: the default for 0, 0 (the store's and
// the API's spelling of unlimited) for Unlimited, else v.
func StoredTenantLimit(v int) int {
	switch {
	case v == 0:
		return TenantLimit
	case v < 0:
		return 0
	}
	return v
}

// StoredStorageQuota returns the storage quota the store applies to a
// tenant without its own, for a setting v: the default for 0, 0 (the
// store's and the API's spelling of unlimited) for Unlimited, else v.
func StoredStorageQuota(v int64) int64 {
	switch {
	case v == 0:
		return TenantStorageQuota
	case v < 0:
		return 0
	}
	return v
}
