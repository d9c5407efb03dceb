package faultcheck

import (
	"encoding/json"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/docket-dev/docket/dockettype"
)

// OpKind is what one operation of the history did.
type OpKind string

const (
	OpSubmit OpKind = "submit" // POST /v1/tasks (or one item of a batch)
	OpCancel OpKind = "cancel" // POST /v1/tasks/{id}/cancel
	OpRead   OpKind = "read"   // GET /v1/tasks/{id}
	OpFault  OpKind = "fault"  // an injected fault (the nemesis), for the record
)

// Outcome is how an operation completed, as the client saw it.
type Outcome string

const (
	// OK: the server answered with success (a submit's 201 or 200).
	OK Outcome = "ok"
	// Failed: the server answered a definite refusal (4xx): nothing
	// happened.
	Failed Outcome = "failed"
	// Indeterminate: no answer (connection reset, timeout), or an answer
	// that does not say whether the operation took effect (5xx): it may or
	// may not have happened.
	Indeterminate Outcome = "indeterminate"
)

// Op is one call in the history: invoked, then completed with an outcome.
type Op struct {
	Index   int     `json:"index"`
	Process int     `json:"process"` // the client that made it; -1 for faults and the checker's own calls
	Kind    OpKind  `json:"kind"`
	Phase   string  `json:"phase"` // load, or resolve (the replays after the drain)
	Tenant  string  `json:"tenant,omitempty"`
	Key     string  `json:"key,omitempty"`
	TaskID  string  `json:"task_id,omitempty"`
	Outcome Outcome `json:"outcome,omitempty"`
	Status  int     `json:"status,omitempty"` // HTTP status; 0 when no answer came
	Code    string  `json:"code,omitempty"`   // error code of a refusal, or the transport's failure
	// Replayed: a submit answered 200 (the key's earlier task).
	Replayed bool `json:"replayed,omitempty"`
	// State is the task state the answer showed (submit, cancel, read).
	State dockettype.State `json:"state,omitempty"`
	// Fault names an injected fault (kill, start, term, pause, resume,
	// pg-stop, pg-start, reset, stall, drop-response, drop-finish), then
	// the node or remote worker it acted on, if any: "kill a", "kill w2".
	Fault string `json:"fault,omitempty"`
	// PID is the server process a term fault stopped. Its Outcome is OK
	// when the process exited by itself, with status 0, within its bound.
	PID      int       `json:"pid,omitempty"`
	Invoked  time.Time `json:"invoked"`
	Complete time.Time `json:"complete"`
}

// Phases of a run.
const (
	PhaseLoad    = "load"
	PhaseResolve = "resolve"
)

// History is the append-only record of every call a run makes. It is safe
// for concurrent use.
type History struct {
	clock clockwork.Clock // stamps Invoked and Complete
	mu    sync.Mutex
	ops   []Op
}

// NewHistory returns an empty history whose operations are stamped by clock.
func NewHistory(clock clockwork.Clock) *History { return &History{clock: clock} }

// Invoke records the start of an operation and returns its index.
func (h *History) Invoke(op Op) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	op.Index = len(h.ops)
	if op.Invoked.IsZero() {
		op.Invoked = h.clock.Now()
	}
	h.ops = append(h.ops, op)
	return op.Index
}

// Complete records how the operation at index i ended; update fills in
// what the answer said.
func (h *History) Complete(i int, update func(*Op)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	op := &h.ops[i]
	update(op)
	op.Complete = h.clock.Now()
}

// Fault records an injected fault.
func (h *History) Fault(name string) {
	now := h.clock.Now()
	h.Invoke(Op{Process: -1, Kind: OpFault, Fault: name, Outcome: OK, Invoked: now, Complete: now})
}

// Ops returns a copy of the operations so far. An operation invoked but
// never completed (the run was cut short) is indeterminate.
func (h *History) Ops() []Op {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]Op, len(h.ops))
	copy(out, h.ops)
	for i := range out {
		if out[i].Outcome == "" {
			out[i].Outcome = Indeterminate
		}
	}
	return out
}

// WriteJSON writes the history as JSON lines.
func (h *History) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	for _, op := range h.Ops() {
		if err := enc.Encode(op); err != nil {
			return err
		}
	}
	return nil
}

// Faults, as the history records them.
const (
	FaultKill         = "kill"          // SIGKILL of a node
	FaultStart        = "start"         // a node (re)started
	FaultTerm         = "term"          // a node stopped with SIGTERM (a graceful stop); PID names the process
	FaultPause        = "pause"         // SIGSTOP of a node
	FaultResume       = "resume"        // SIGCONT of a node
	FaultPGStop       = "pg-stop"       // PostgreSQL stopped -m immediate
	FaultPGStart      = "pg-start"      // PostgreSQL started again
	FaultResetAll     = "reset-all"     // every proxied connection reset
	FaultResetOne     = "reset-one"     // one proxied connection reset
	FaultStall        = "stall"         // proxied traffic held
	FaultDropResponse = "drop-response" // a committed submit's answer dropped (Key, TaskID name it)
	FaultDropFinish   = "drop-finish"   // a remote worker's committed finish call's answer dropped
)

// faultName is the fault of an Op's Fault, without the node: "kill".
func faultName(fault string) string {
	name, _, _ := strings.Cut(fault, " ")
	return name
}
