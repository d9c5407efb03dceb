package store

import (
	"context"
	"time"

	"github.com/docket-dev/docket/dockettype"
)

// Schedules stores periodic schedules: what each fires (tenant, workflow,
// input, options), when it fires next, and the last runs it made. The
// store knows nothing of cron expressions: the caller computes every fire
// time, and every write is a compare-and-set on the schedule's version, so
// that the schedulers of several nodes never apply one change twice.
type Schedules interface {
	// PutSchedule writes a schedule if its version is ExpectVersion (0:
	// only if there is none of that name) and returns it with its version
	// one higher; ok is false (nothing written) when the version differs.
	// A replaced schedule keeps its runs, last task and counters.
	PutSchedule(ctx context.Context, params *PutScheduleParams) (sched *Schedule, ok bool, err error)
	// GetSchedule returns one schedule, or ErrNotFound.
	GetSchedule(ctx context.Context, name string) (*Schedule, error)
	// ListSchedules returns every schedule, by name.
	ListSchedules(ctx context.Context) ([]*Schedule, error)
	// DeleteSchedule removes a schedule and its runs (ErrNotFound when
	// there is none). Tasks it made stay.
	DeleteSchedule(ctx context.Context, name string) error
	// FindDueSchedules returns at most Limit schedules that are not paused
	// and whose next fire time is at or before Now, earliest first, using
	// an index; each says whether its last task is still live.
	FindDueSchedules(ctx context.Context, params *FindDueSchedulesParams) ([]*Schedule, error)
	// AdvanceSchedule moves a schedule past a fire time if its version is
	// still Version (and, with IfLastTaskLive, its last task is still
	// live): next fire time, counters and, for a fire, the last task and a
	// run, all in one transaction; the version goes one up. ok is false
	// (nothing written) when the schedule changed or is gone. The runs kept
	// are the ScheduleRunsKept latest.
	AdvanceSchedule(ctx context.Context, params *AdvanceScheduleParams) (ok bool, err error)
	// ListScheduleRuns returns a schedule's latest runs, newest first (at
	// most Limit), each with its task's state as it is now.
	ListScheduleRuns(ctx context.Context, params *ListScheduleRunsParams) ([]ScheduleRun, error)
}

// ScheduleRunsKept is how many runs a schedule keeps: older ones are
// deleted as new ones are recorded.
const ScheduleRunsKept = 20

// Overlap policies: whether a schedule fires while its previous task is
// still queued or running.
const (
	OverlapAllow = "allow"
	OverlapSkip  = "skip"
)

// Missed-fire policies: what a schedule does with fire times that no node
// fired in time (see queue's schedule scheduler for "in time").
const (
	MissedSkip    = "skip"
	MissedCatchUp = "catch_up"
)

// ScheduleSpec is what a schedule fires and when, as an admin set it.
type ScheduleSpec struct {
	Name         string
	Tenant       string
	Workflow     string
	Input        []byte // JSON, compacted
	Cron         string
	TimeZone     string          // IANA name; "UTC" by default
	Pool         dockettype.Pool // "": the workflow's default
	TimeoutMS    int64           // 0: the workflow's or the server's default
	MaxAttempts  int             // 0: the workflow's or the server's default
	Overlap      string          // OverlapAllow or OverlapSkip
	Missed       string          // MissedSkip or MissedCatchUp
	CatchUpLimit int             // with MissedCatchUp: most missed times fired after a gap
}

// Schedule is a stored schedule.
type Schedule struct {
	ScheduleSpec
	Paused bool
	// NextFireAt is the earliest fire time not yet handled (fired, skipped
	// or dropped as missed). A paused schedule keeps it but does not fire.
	NextFireAt time.Time
	Version    int64
	// LastTaskID is the task of the latest fire ("" before the first);
	// LastFireAt its fire time.
	LastTaskID string
	LastFireAt *time.Time
	// Counters since the schedule was created: fires that made (or found)
	// a task, fire times dropped as missed, fire times skipped because the
	// previous task was still live (overlap skip).
	Fired, MissedFires, Skipped int64
	// LastError is the code of the latest fire that admission refused for
	// good (e.g. unknown_workflow); "" after a fire that made a task.
	LastError dockettype.Code
	CreatedAt time.Time
	UpdatedAt time.Time
	// LastTaskLive: the last task is queued or running. Set by
	// FindDueSchedules only.
	LastTaskLive bool
}

// ScheduleRun is one task a schedule made.
type ScheduleRun struct {
	FireAt time.Time
	TaskID string
	// State is the task's state now; "" when the task was deleted
	// (retention).
	State dockettype.State
}

// PutScheduleParams writes a schedule.
type PutScheduleParams struct {
	Now        time.Time
	Spec       ScheduleSpec
	Paused     bool
	NextFireAt time.Time
	// ExpectVersion is the version being replaced; 0: create only.
	ExpectVersion int64
}

// FindDueSchedulesParams bounds one scan for due schedules.
type FindDueSchedulesParams struct {
	Now   time.Time
	Limit int
}

// AdvanceScheduleParams moves a schedule past fire times.
type AdvanceScheduleParams struct {
	Now        time.Time
	Name       string
	Version    int64     // the version the caller read
	NextFireAt time.Time // the new next fire time
	// Run, when set, is the fire that made (or found) a task: it becomes
	// the last task and a run of the schedule, and Fired goes one up.
	Run *ScheduleRun
	// Missed and Skipped are added to the counters.
	Missed, Skipped int64
	// LastError replaces the schedule's last error.
	LastError dockettype.Code
	// IfLastTaskLive applies the change only while the schedule's last
	// task is still queued or running (an overlap skip).
	IfLastTaskLive bool
}

// ListScheduleRunsParams names a schedule's runs.
type ListScheduleRunsParams struct {
	Name  string
	Limit int
}
