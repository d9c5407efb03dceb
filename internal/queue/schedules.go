package queue

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// Schedule limits.
const (
	MaxScheduleNameLen = 128
	// MaxCatchUpLimit bounds how many missed fire times one gap catches up.
	MaxCatchUpLimit = 100
	// NextFireTimesShown is how many coming fire times a schedule shows.
	NextFireTimesShown = 5
)

var scheduleNameRE = regexp.MustCompile(`^[a-z0-9._-]+$`)

// ValidScheduleName reports whether name can be a schedule's name: 1 to
// 128 characters of [a-z0-9._-].
func ValidScheduleName(name string) bool {
	return len(name) <= MaxScheduleNameLen && scheduleNameRE.MatchString(name)
}

// ScheduleRequest creates or replaces a schedule.
type ScheduleRequest struct {
	Name         string
	Tenant       string
	Workflow     string
	Input        json.RawMessage // nil: JSON null
	Cron         string
	TimeZone     string          // "": UTC
	Pool         dockettype.Pool // "": the workflow's default
	TimeoutMS    int64           // 0: the default
	MaxAttempts  int             // 0: the default
	Overlap      string          // store.OverlapAllow or store.OverlapSkip
	Missed       string          // store.MissedSkip or store.MissedCatchUp
	CatchUpLimit int             // MissedCatchUp only; 0: 1
	Paused       bool
}

// Schedule is a schedule as the admin API shows it.
type Schedule struct {
	store.Schedule
	// NextFireTimes are the coming fire times (the first may be past when
	// the schedule is behind); none while it is paused.
	NextFireTimes []time.Time
	// Runs are its latest tasks, newest first (GetSchedule only).
	Runs []store.ScheduleRun
}

// putAttempts bounds the read-modify-write of a schedule that the
// schedulers advance at the same time.
const putAttempts = 5

// PutSchedule creates (created true) or replaces a schedule. A replaced
// schedule keeps its next fire time when its cron expression and time
// zone are unchanged and it stays running, so that applying the same
// definition again never skips or repeats a fire; otherwise its next fire
// time is the first after now. Errors are *dockettype.Error values.
func (s *Service) PutSchedule(ctx context.Context, req *ScheduleRequest) (*Schedule, bool, error) {
	spec, cs, err := s.scheduleSpec(ctx, req)
	if err != nil {
		return nil, false, err
	}
	for range putAttempts {
		old, err := s.readSchedule(ctx, spec.Name)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, false, s.storeFailure(ctx, "put_schedule", err)
		}
		p := &store.PutScheduleParams{Now: s.clock.Now(), Spec: *spec, Paused: req.Paused}
		p.NextFireAt = cs.next(p.Now)
		if old != nil {
			p.ExpectVersion = old.Version
			if !old.Paused && !req.Paused && old.Cron == spec.Cron && old.TimeZone == spec.TimeZone {
				p.NextFireAt = old.NextFireAt
			}
		}
		sc, ok, err := s.writeSchedule(ctx, p)
		if err != nil {
			return nil, false, err
		}
		if ok {
			s.log.InfoContext(ctx, "schedule written", "schedule", sc.Name, "tenant", sc.Tenant, "version", sc.Version)
			return s.scheduleView(sc, cs, nil), old == nil, nil
		}
	}
	return nil, false, dockettype.NewError(dockettype.CodeStoreUnavailable, "the schedule kept changing while it was written; retry")
}

// scheduleSpec validates a request: the name, the cron expression and
// time zone, the options, and the workflow, which the runtime resolves as
// for a submission.
func (s *Service) scheduleSpec(ctx context.Context, req *ScheduleRequest) (*store.ScheduleSpec, *cronSchedule, error) {
	invalid := func(msg string) error { return dockettype.NewError(dockettype.CodeInvalidRequest, msg) }
	if !ValidScheduleName(req.Name) {
		return nil, nil, invalid(fmt.Sprintf("a schedule name is 1 to %d characters of [a-z0-9._-]", MaxScheduleNameLen))
	}
	if req.Tenant == "" {
		return nil, nil, invalid(`"tenant" is required`)
	}
	if req.Workflow == "" {
		return nil, nil, invalid(`"workflow" is required`)
	}
	tz := req.TimeZone
	if tz == "" {
		tz = "UTC"
	}
	cs, err := parseCron(req.Cron, tz)
	if err != nil {
		return nil, nil, invalid(err.Error())
	}
	if !cs.next(s.clock.Now()).Before(never) {
		return nil, nil, invalid(fmt.Sprintf("cron %s never fires", quoteExpr(req.Cron)))
	}
	if req.Pool != "" && !req.Pool.Valid() {
		return nil, nil, invalid(`pool must be "online" or "offline"`)
	}
	if req.TimeoutMS < 0 || req.TimeoutMS > s.cfg.MaxTimeout.Milliseconds() {
		return nil, nil, invalid(fmt.Sprintf("timeout_ms must be between 1 and %d (0 or absent: the default)", s.cfg.MaxTimeout.Milliseconds()))
	}
	if req.MaxAttempts < 0 || req.MaxAttempts > s.cfg.MaxAttemptsLimit {
		return nil, nil, invalid(fmt.Sprintf("max_attempts must be between 1 and %d (0 or absent: the default)", s.cfg.MaxAttemptsLimit))
	}
	if req.Overlap != store.OverlapAllow && req.Overlap != store.OverlapSkip {
		return nil, nil, invalid(`overlap must be "allow" or "skip"`)
	}
	limit := req.CatchUpLimit
	switch req.Missed {
	case store.MissedSkip:
		if limit != 0 {
			return nil, nil, invalid(`catch_up_limit applies to missed "catch_up" only`)
		}
	case store.MissedCatchUp:
		if limit == 0 {
			limit = 1
		}
		if limit < 1 || limit > MaxCatchUpLimit {
			return nil, nil, invalid(fmt.Sprintf("catch_up_limit must be between 1 and %d", MaxCatchUpLimit))
		}
	default:
		return nil, nil, invalid(`missed must be "skip" or "catch_up"`)
	}
	input := []byte("null")
	if len(req.Input) > 0 {
		var buf bytes.Buffer
		if err := json.Compact(&buf, req.Input); err != nil {
			return nil, nil, invalid("input is not valid JSON")
		}
		input = buf.Bytes()
	}
	if _, err := s.runtime.Resolve(ctx, req.Workflow); err != nil {
		var de *dockettype.Error
		if errors.As(err, &de) {
			return nil, nil, dockettype.NewError(de.Code, de.Message)
		}
		return nil, nil, s.storeFailure(ctx, "resolve_workflow", err)
	}
	return &store.ScheduleSpec{
		Name: req.Name, Tenant: req.Tenant, Workflow: req.Workflow, Input: input, Cron: req.Cron, TimeZone: tz,
		Pool: req.Pool, TimeoutMS: req.TimeoutMS, MaxAttempts: req.MaxAttempts,
		Overlap: req.Overlap, Missed: req.Missed, CatchUpLimit: limit,
	}, cs, nil
}

// GetSchedule returns a schedule with its coming fire times and latest
// runs.
func (s *Service) GetSchedule(ctx context.Context, name string) (*Schedule, error) {
	sc, err := s.readSchedule(ctx, name)
	if err != nil {
		return nil, s.scheduleFailure(ctx, "get_schedule", err)
	}
	qctx, cancel := s.query(ctx)
	defer cancel()
	runs, err := s.store.ListScheduleRuns(qctx, &store.ListScheduleRunsParams{Name: name, Limit: store.ScheduleRunsKept})
	if err != nil {
		return nil, s.storeFailure(ctx, "list_schedule_runs", err)
	}
	if runs == nil {
		runs = []store.ScheduleRun{}
	}
	return s.scheduleView(sc, nil, runs), nil
}

// ListSchedules returns every schedule, by name, with its coming fire
// times.
func (s *Service) ListSchedules(ctx context.Context) ([]*Schedule, error) {
	qctx, cancel := s.query(ctx)
	defer cancel()
	list, err := s.store.ListSchedules(qctx)
	if err != nil {
		return nil, s.storeFailure(ctx, "list_schedules", err)
	}
	out := make([]*Schedule, len(list))
	for i, sc := range list {
		out[i] = s.scheduleView(sc, nil, nil)
	}
	return out, nil
}

// DeleteSchedule removes a schedule and its runs; the tasks it made stay.
func (s *Service) DeleteSchedule(ctx context.Context, name string) error {
	qctx, cancel := s.query(ctx)
	defer cancel()
	if err := s.store.DeleteSchedule(qctx, name); err != nil {
		return s.scheduleFailure(ctx, "delete_schedule", err)
	}
	s.log.InfoContext(ctx, "schedule deleted", "schedule", name)
	return nil
}

// PauseSchedule stops a schedule from firing (pausing a paused one
// changes nothing).
func (s *Service) PauseSchedule(ctx context.Context, name string) (*Schedule, error) {
	return s.setPaused(ctx, name, true)
}

// ResumeSchedule lets a paused schedule fire again, from the first fire
// time after now: the times that passed while it was paused are neither
// fired nor counted as missed.
func (s *Service) ResumeSchedule(ctx context.Context, name string) (*Schedule, error) {
	return s.setPaused(ctx, name, false)
}

func (s *Service) setPaused(ctx context.Context, name string, paused bool) (*Schedule, error) {
	for range putAttempts {
		sc, err := s.readSchedule(ctx, name)
		if err != nil {
			return nil, s.scheduleFailure(ctx, "pause_schedule", err)
		}
		cs, err := parseCron(sc.Cron, sc.TimeZone)
		if err != nil { // stored by PutSchedule, so it parsed then
			return nil, dockettype.NewError(dockettype.CodeInternal, "the stored cron expression does not parse")
		}
		if sc.Paused == paused {
			return s.scheduleView(sc, cs, nil), nil
		}
		now := s.clock.Now()
		next := sc.NextFireAt
		if !paused {
			next = cs.next(now)
		}
		out, ok, err := s.writeSchedule(ctx, &store.PutScheduleParams{Now: now, Spec: sc.ScheduleSpec, Paused: paused,
			NextFireAt: next, ExpectVersion: sc.Version})
		if err != nil {
			return nil, err
		}
		if ok {
			s.log.InfoContext(ctx, "schedule paused or resumed", "schedule", name, "paused", paused)
			return s.scheduleView(out, cs, nil), nil
		}
	}
	return nil, dockettype.NewError(dockettype.CodeStoreUnavailable, "the schedule kept changing while it was written; retry")
}

func (s *Service) readSchedule(ctx context.Context, name string) (*store.Schedule, error) {
	qctx, cancel := s.query(ctx)
	defer cancel()
	return s.store.GetSchedule(qctx, name)
}

func (s *Service) writeSchedule(ctx context.Context, p *store.PutScheduleParams) (*store.Schedule, bool, error) {
	qctx, cancel := s.query(ctx)
	defer cancel()
	sc, ok, err := s.store.PutSchedule(qctx, p)
	if err != nil {
		return nil, false, s.storeFailure(ctx, "put_schedule", err)
	}
	return sc, ok, nil
}

// scheduleFailure is storeFailure with a schedule's not-found message.
func (s *Service) scheduleFailure(ctx context.Context, op string, err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return dockettype.NewError(dockettype.CodeNotFound, "no such schedule")
	}
	return s.storeFailure(ctx, op, err)
}

// scheduleView adds the coming fire times (cs may be nil: parsed here).
func (s *Service) scheduleView(sc *store.Schedule, cs *cronSchedule, runs []store.ScheduleRun) *Schedule {
	v := &Schedule{Schedule: *sc, NextFireTimes: []time.Time{}, Runs: runs}
	if sc.Paused {
		return v
	}
	if cs == nil {
		var err error
		if cs, err = parseCron(sc.Cron, sc.TimeZone); err != nil {
			return v
		}
	}
	v.NextFireTimes = cs.nextN(sc.NextFireAt, NextFireTimesShown)
	return v
}
