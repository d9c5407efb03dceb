package store

import (
	"strings"

	"github.com/docket-dev/docket/dockettype"
)

// Queue names where a live task waits to be claimed, and so who claims it.
// A task of a workflow compiled into the server waits in its pool's queue
// ("online", "offline"), which the node's own workers claim. A task of a
// remote workflow waits in the queue of its pool and workflow
// ("online/images.resize"), which only remote workers serving that
// workflow claim. Capacity is counted per pool whatever the queue; fair
// dispatch across tenants runs within each queue.
type Queue string

// queueSep separates the pool from the workflow in a remote queue's name.
// Workflow names never contain it.
const queueSep = "/"

// PoolQueue is the queue of pool's in-process workflows.
func PoolQueue(p dockettype.Pool) Queue { return Queue(p) }

// RemoteQueue is the queue of a remote workflow's tasks in pool p.
func RemoteQueue(p dockettype.Pool, workflow string) Queue {
	return Queue(string(p) + queueSep + workflow)
}

// Pool is the pool whose capacity the queue's tasks count against.
func (q Queue) Pool() dockettype.Pool {
	p, _, _ := strings.Cut(string(q), queueSep)
	return dockettype.Pool(p)
}

// Remote reports whether remote workers claim the queue.
func (q Queue) Remote() bool { return strings.Contains(string(q), queueSep) }

// Workflow is the remote workflow of the queue ("" for a pool queue).
func (q Queue) Workflow() string {
	_, wf, _ := strings.Cut(string(q), queueSep)
	return wf
}

// Valid reports whether q names a pool, or a pool and a workflow.
func (q Queue) Valid() bool {
	if !q.Pool().Valid() {
		return false
	}
	return !q.Remote() || q.Workflow() != ""
}
