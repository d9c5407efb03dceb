package dockettype

import (
	"encoding/json"
	"time"
)

// Task is the client-visible view of a task.
type Task struct {
	ID            string          `json:"id"`
	Tenant        string          `json:"tenant"`
	Author        string          `json:"author"`
	Workflow      string          `json:"workflow"`
	Pool          Pool            `json:"pool"`
	State         State           `json:"state"`
	Attempt       int             `json:"attempt"`
	MaxAttempts   int             `json:"max_attempts"`
	Priority      int             `json:"priority"`
	CreatedAt     time.Time       `json:"created_at"`
	RunAt         *time.Time      `json:"run_at"` // not started before; nil: at once
	StartedAt     *time.Time      `json:"started_at"`
	FinishedAt    *time.Time      `json:"finished_at"`
	DeadlineAt    time.Time       `json:"deadline_at"`
	TraceID       string          `json:"trace_id"`
	ConfigVersion string          `json:"config_version"`
	Result        json.RawMessage `json:"result"`
	Error         *TaskError      `json:"error"`
	// ConcurrencyKey, when set, bounds how many tasks with the same key
	// (of the tenant and workflow) run at once.
	ConcurrencyKey string `json:"concurrency_key,omitempty"`
	// WaitingOn says why a queued task has not started: "dependencies",
	// "run_at", "rate_limit", "concurrency_key" or "paused"; null when
	// nothing holds it back, or it is not queued.
	WaitingOn WaitingOn `json:"waiting_on"`
	// DependsOn lists the tasks this one waits for, in the order given at
	// submission (absent when none). Only single-task reads carry it.
	DependsOn []string `json:"depends_on,omitempty"`

	// LeaseEpoch is the fencing token. It is internal and never serialized.
	LeaseEpoch int64 `json:"-"`
}

// TaskError is why a task failed (or why its last attempt did): a stable
// code and a short human reason. The message is shown to the task's own
// tenant only and never logged; it never quotes the input or a database
// error.
type TaskError struct {
	Code    Code   `json:"code"`
	Message string `json:"message,omitempty"`
}

// Event is one row of a task's append-only history.
type Event struct {
	ID     int64     `json:"id"`
	TaskID string    `json:"task_id"`
	From   State     `json:"from"` // empty for the admission event
	To     State     `json:"to"`
	Epoch  int64     `json:"epoch"`
	Code   Code      `json:"code,omitempty"`
	At     time.Time `json:"at"`
	// By is who made the transition, when a client did (a retry): the
	// key's ID and role.
	By *Actor `json:"by,omitempty"`
}

// Actor is the API key behind a client's change: its ID and role, never
// the key.
type Actor struct {
	KeyID string `json:"key_id"`
	Role  Role   `json:"role"`
}

// Evidence is one item a workflow recorded while running a task.
type Evidence struct {
	ID        int64           `json:"id"`
	TaskID    string          `json:"task_id"`
	Attempt   int             `json:"attempt"`
	Epoch     int64           `json:"epoch"`
	Kind      string          `json:"kind"`
	Body      json.RawMessage `json:"body"`
	CreatedAt time.Time       `json:"created_at"`
}

// Role is what an API key may do.
type Role string

const (
	RoleMember Role = "member" // the tasks of its own tenant
	RoleAdmin  Role = "admin"  // the operator of the whole service, plus its own tenant's tasks
	RoleWorker Role = "worker" // a remote worker: claims and finishes tasks (/v1/worker/*) only
)

// Valid reports whether r is a known role.
func (r Role) Valid() bool { return r == RoleMember || r == RoleAdmin || r == RoleWorker }

// Principal is the authenticated caller: the server derives it from the API
// key and never from the request body.
type Principal struct {
	Tenant string
	Name   string
	Role   Role
	// KeyID is the ID of the API key the caller presented.
	KeyID string
	// AllTenants: a worker key that serves every tenant's tasks.
	AllTenants bool
}

// EvidenceItem is one piece of evidence as a workflow writes it.
type EvidenceItem struct {
	Kind string          `json:"kind"`
	Body json.RawMessage `json:"body"`
}

// MaxConcurrencyKey is the longest concurrency key, in bytes.
const MaxConcurrencyKey = 255

// ValidConcurrencyKey reports whether key is 1 to 255 visible ASCII
// characters (no space or control character).
func ValidConcurrencyKey(key string) bool {
	if key == "" || len(key) > MaxConcurrencyKey {
		return false
	}
	for i := 0; i < len(key); i++ {
		if key[i] < '!' || key[i] > '~' {
			return false
		}
	}
	return true
}
