package dockettype

import "encoding/json"

// WaitingOn is why a queued task is not running yet, as the task object's
// "waiting_on" says: one of the constants below, or empty (JSON null) when
// nothing holds it back.
type WaitingOn string

const (
	// WaitingOnDependencies: a task it depends on has not finished yet.
	WaitingOnDependencies WaitingOn = "dependencies"
)

// MarshalJSON writes the empty value as null.
func (w WaitingOn) MarshalJSON() ([]byte, error) {
	if w == "" {
		return []byte("null"), nil
	}
	return json.Marshal(string(w))
}

// DependencyResult is the outcome of one task another depends on, as the
// dependent's workflow reads it (fan-in): its state and, once terminal, its
// result or error.
type DependencyResult struct {
	ID     string          `json:"id"`
	State  State           `json:"state"`
	Result json.RawMessage `json:"result"`
	Error  *TaskError      `json:"error"`
}
