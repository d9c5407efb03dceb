package httpapitest

import (
	"fmt"

	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/store/faultstore"
)

// ErrOutage is what a failed store call returns in these tests. It carries
// SQL text on purpose: tests check that none of it reaches a response or a
// log line.
var ErrOutage = fmt.Errorf("SELECT id FROM tasks WHERE tenant = ?: database is locked: %w", store.ErrUnavailable)

// taskOps are the store calls the API makes for tasks (admission, reads,
// cancel, readiness). The pools and schedulers use other calls, so they keep
// working while these fail.
var taskOps = []string{"admit", "get_task", "list_tasks", "list_events", "list_evidence", "cancel", "ping"}

// FailTasks makes fs fail (on) or serve (off) the API's task calls.
func FailTasks(fs *faultstore.Store, on bool) { set(fs, taskOps, on) }

// FailKeys makes fs fail (on) or serve (off) API key lookups.
func FailKeys(fs *faultstore.Store, on bool) { set(fs, []string{"lookup_api_key"}, on) }

func set(fs *faultstore.Store, ops []string, on bool) {
	for _, op := range ops {
		if on {
			fs.Set(op, faultstore.Fail(ErrOutage))
		} else {
			fs.Set(op, nil)
		}
	}
}
