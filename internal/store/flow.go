package store

import (
	"context"
	"time"
)

// FlowControl stores what holds queued tasks back from starting: pauses,
// rate limits on starts and the concurrency allowed per key (see
// docs/flow-control.md). Claims read the rules in their own transaction,
// so a change holds on every node from its commit on.
type FlowControl interface {
	// SetPaused pauses (or resumes) one target and returns every paused
	// target, by scope then key.
	SetPaused(ctx context.Context, params *SetPausedParams) ([]Pause, error)
	// UpdateFlowRule changes the limits given and returns the rule. When
	// the concurrency per key goes up, waiting tasks of its keys start in
	// the same transaction.
	UpdateFlowRule(ctx context.Context, params *UpdateFlowRuleParams) (*FlowRule, error)
	// GetFlowRule returns one target's rule; one that has none is a rule
	// with no limit (not ErrNotFound).
	GetFlowRule(ctx context.Context, target FlowTarget) (*FlowRule, error)
	// ListFlowRules returns every rule, by scope then key.
	ListFlowRules(ctx context.Context) ([]*FlowRule, error)
	// FlowWaiting counts the live tasks held back, by why (see
	// WaitingOn*): its cost grows with the tasks held back, not with the
	// history.
	FlowWaiting(ctx context.Context, now time.Time) (map[string]int, error)
}

// MaxRate bounds rates and bursts (the tick arithmetic stays in int64).
const MaxRate = 1_000_000

// Flow scopes: what a pause or a limit applies to.
const (
	ScopePool     = "pool"
	ScopeTenant   = "tenant"
	ScopeWorkflow = "workflow"
)

// Why a queued task waits (dockettype.Task.WaitingOn).
const (
	WaitingOnRunAt          = "run_at"
	WaitingOnRateLimit      = "rate_limit"
	WaitingOnConcurrencyKey = "concurrency_key"
	WaitingOnPaused         = "paused"
)

// FlowTarget names a pool, a tenant or a workflow.
type FlowTarget struct {
	Scope string // ScopePool, ScopeTenant or ScopeWorkflow
	Key   string
}

// SetPausedParams pauses or resumes one target.
type SetPausedParams struct {
	Now    time.Time
	Target FlowTarget
	Paused bool
	// RefuseSubmissions: while paused, admissions of the target's tasks
	// are refused (SubmissionsPaused) rather than admitted to wait. A
	// resume clears it; so does a pause without it.
	RefuseSubmissions bool
}

// Pause is one paused target.
type Pause struct {
	FlowTarget
	RefuseSubmissions bool
}

// UpdateFlowRuleParams changes a target's limits: a nil field is left as
// it is; Clear* removes the limit.
type UpdateFlowRuleParams struct {
	Now               time.Time
	Target            FlowTarget
	RatePerSecond     *int // starts per second (>= 1)
	ClearRate         bool
	Burst             *int // >= 0
	ClearBurst        bool
	ConcurrencyPerKey *int // workflows only, >= 1
	ClearConcurrency  bool
}

// FlowRule is what holds one target's tasks back.
type FlowRule struct {
	FlowTarget
	Paused bool
	// RefuseSubmissions: the pause refuses admissions too (only while
	// Paused).
	RefuseSubmissions bool
	// RatePerSecond bounds starts; 0: no rate limit. Burst is the extra
	// a one-second window may hold (see docs/flow-control.md).
	RatePerSecond int
	Burst         int
	// ConcurrencyPerKey bounds the running tasks of one concurrency key
	// (workflows; 0: the default, 1).
	ConcurrencyPerKey int
	// ThrottledAt is when a claim last found the rate limit exhausted.
	ThrottledAt *time.Time
}

// ClaimOutcome is what a claim reports besides its tasks.
type ClaimOutcome struct {
	// Throttled counts ready tasks a rate limit or a pause held back.
	Throttled int
	// RetryAt, when set, is when a rate limit that held tasks back has
	// tokens again: the claimer should try again then rather than wait
	// for its poll.
	RetryAt time.Time
	// More: ready tasks may remain in the queue after this claim (it
	// took its limit, or the ready counts it read were more than it
	// took). False means that the claim took all the ready work it found.
	More bool
}
