package dockettype

// State is where a task is in its lifecycle.
//
//	queued → running → succeeded | failed
//	queued | running → cancelled | timed_out
//	running → queued (retry or lease recovery)
type State string

const (
	StateQueued    State = "queued"
	StateRunning   State = "running"
	StateSucceeded State = "succeeded"
	StateFailed    State = "failed"
	StateCancelled State = "cancelled"
	StateTimedOut  State = "timed_out"
)

// States lists every state, non-terminal first.
var States = []State{StateQueued, StateRunning, StateSucceeded, StateFailed, StateCancelled, StateTimedOut}

// Terminal reports whether no further transition can leave s.
func (s State) Terminal() bool {
	switch s {
	case StateSucceeded, StateFailed, StateCancelled, StateTimedOut:
		return true
	}
	return false
}

// Valid reports whether s is one of the known states.
func (s State) Valid() bool {
	for _, v := range States {
		if s == v {
			return true
		}
	}
	return false
}
