package engine

import "github.com/docket-dev/docket/dockettype"

// waitingOnColumns are the columns of the live row waitingOn reads, after
// taskColumns (NULL when the task is terminal).
const waitingOnColumns = "q.deps_pending"

// waitingRow is what waitingOn reads of a task's live row.
type waitingRow struct {
	depsPending *int64
}

// dest is where ScanTask scans waitingOnColumns.
func (w *waitingRow) dest() []any { return []any{&w.depsPending} }

// waitingOn says why a queued task is not running yet: the one place that
// decides the task object's "waiting_on".
func waitingOn(state dockettype.State, w waitingRow) dockettype.WaitingOn {
	if state != dockettype.StateQueued {
		return ""
	}
	if w.depsPending != nil && *w.depsPending > 0 {
		return dockettype.WaitingOnDependencies
	}
	return ""
}
