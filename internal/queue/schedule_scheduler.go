package queue

import (
	"context"
	"errors"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/metrics"
	"github.com/docket-dev/docket/internal/store"
)

// scheduleFirer is the store calls the schedule scheduler makes.
type scheduleFirer interface {
	FindDueSchedules(ctx context.Context, params *store.FindDueSchedulesParams) ([]*store.Schedule, error)
	AdvanceSchedule(ctx context.Context, params *store.AdvanceScheduleParams) (bool, error)
}

// submitFunc admits one task the way a client's submission is admitted
// (Service.Submit).
type submitFunc func(ctx context.Context, p dockettype.Principal, req *SubmitRequest) (*SubmitResult, error)

// maxStepsPerSchedule bounds the fires (and skips) of one schedule in one
// tick; the rest waits for the next tick.
const maxStepsPerSchedule = 2 * MaxCatchUpLimit

// ScheduleScheduler fires the periodic schedules. Every node runs one, on
// its own loop, timer and store fork, and there is no leader: each tick
// reads the due schedules (an indexed scan with a LIMIT), and for each
// one decides the next step (planFire): drop the fire times it missed,
// skip a fire while the previous task is live (overlap skip), or fire.
//
// A fire is a normal submission (submitFunc), as the schedule's tenant
// with the author schedule:<name> and the idempotency key
// schedule:<name>:<fire time>, so capacity, tenant limits, fairness and
// the event history apply as to any task, and a second node's fire of the
// same time is a replay of the same task. Then the schedule moves past the
// fire time with a compare-and-set on its version (AdvanceSchedule): of
// two nodes that fired the same time one advances, the other's write is
// refused and it moves on. A crash between the two steps leaves the fire
// time due, and the next fire of it replays the task.
//
// A fire refused for capacity (queue_full, tenant_quota_exceeded) is not
// advanced past: the next ticks try it again, and once it is more than
// grace late the missed policy applies to it like to a time no node was
// up for. A fire refused for good (the workflow was removed, the request
// is no longer valid, or the key already names a task of an earlier
// definition) is advanced past with its code as the schedule's last error.
type ScheduleScheduler struct {
	schedulerLoop
	store  scheduleFirer
	submit submitFunc
	grace  time.Duration
	batch  int
	// crons caches parsed expressions by time zone and expression; only
	// the loop's goroutine touches it.
	crons map[[2]string]*cronSchedule
}

func newScheduleScheduler(base baseService, cfg schedulerConfig, batch int, grace time.Duration, st scheduleFirer,
	submit submitFunc, m *metrics.Metrics, sig *schedulerSignals) *ScheduleScheduler {
	sc := &ScheduleScheduler{store: st, submit: submit, grace: grace, batch: batch, crons: map[[2]string]*cronSchedule{}}
	sc.schedulerLoop = newSchedulerLoop(base, cfg, m, sig, sc.tick)
	return sc
}

func (sc *ScheduleScheduler) tick(ctx context.Context) error {
	qctx, cancel := sc.query(ctx)
	due, err := sc.store.FindDueSchedules(qctx, &store.FindDueSchedulesParams{Now: sc.clock.Now(), Limit: sc.batch})
	cancel()
	if err != nil {
		return err
	}
	// A schedule whose fire fails for a reason of its own must not hold
	// back the ones after it; an outage stops the tick.
	var first error
	for _, row := range due {
		err := sc.fireDue(ctx, row)
		if err == nil {
			continue
		}
		if ctx.Err() != nil || unreachable(err) {
			return err
		}
		if first == nil {
			first = err
		}
	}
	return first
}

// unreachable reports whether err says the store could not be reached.
func unreachable(err error) bool {
	var de *dockettype.Error
	return isTransient(err) || errors.As(err, &de) && de.Code == dockettype.CodeStoreUnavailable
}

// ScheduleKey is the idempotency key of a schedule's fire time.
func ScheduleKey(name string, fire time.Time) string {
	return "schedule:" + name + ":" + fire.UTC().Format(time.RFC3339Nano)
}

// ScheduleAuthor is the author of a schedule's tasks.
func ScheduleAuthor(name string) string { return "schedule:" + name }

// fireDue takes a due schedule through its steps until it is no longer
// due, another node or an admin changed it, or the step bound is reached.
func (sc *ScheduleScheduler) fireDue(ctx context.Context, row *store.Schedule) error {
	cs, err := sc.cron(row)
	if err != nil {
		// PutSchedule stored it, so it parsed then (a time zone this
		// build does not know, say): it stays due and is counted.
		sc.log.ErrorContext(ctx, "stored schedule does not parse", "code", dockettype.CodeInternal, "schedule", row.Name)
		return nil
	}
	version, next, lastLive, lastErr := row.Version, row.NextFireAt, row.LastTaskLive, row.LastError
	for range maxStepsPerSchedule {
		now := sc.clock.Now()
		plan := planFire(cs, next, now, sc.grace, row.Missed, row.CatchUpLimit)
		if plan.Fire.IsZero() && plan.Dropped == 0 {
			return nil // not due
		}
		adv := &store.AdvanceScheduleParams{Now: now, Name: row.Name, Version: version, NextFireAt: plan.Next,
			Missed: plan.Dropped, LastError: lastErr}
		outcome := ""
		switch {
		case plan.Fire.IsZero(): // every due time was missed
		case row.Overlap == store.OverlapSkip && lastLive:
			adv.Skipped, adv.IfLastTaskLive, outcome = 1, true, "skipped"
		default:
			res, err := sc.submit(ctx, dockettype.Principal{Tenant: row.Tenant, Name: ScheduleAuthor(row.Name), Role: dockettype.RoleMember},
				&SubmitRequest{IdempotencyKey: ScheduleKey(row.Name, plan.Fire), Workflow: row.Workflow, Input: row.Input,
					Pool: row.Pool, TimeoutMS: row.TimeoutMS, MaxAttempts: row.MaxAttempts, RunAt: plan.Fire})
			var de *dockettype.Error
			switch {
			case err == nil:
				adv.Run, adv.LastError = &store.ScheduleRun{FireAt: plan.Fire, TaskID: res.Task.ID}, ""
				lastLive = !res.Task.State.Terminal()
				// Counted whether or not this node's advance wins: the
				// task was made (or found) by this node's submission.
				if res.Replayed {
					sc.metrics.ScheduleFires.WithLabelValues("replayed").Inc()
				} else {
					sc.metrics.ScheduleFires.WithLabelValues("admitted").Inc()
					sc.metrics.ScheduleLag.Observe(res.Task.CreatedAt.Sub(plan.Fire).Seconds())
				}
			case errors.As(err, &de) && (de.Code == dockettype.CodeQueueFull || de.Code == dockettype.CodeTenantQuotaExceeded ||
				de.Code == dockettype.CodeStorageQuotaExceeded || de.Code == dockettype.CodeSubmissionsPaused):
				// Tried again at the next tick, until the missed policy
				// takes it.
				sc.metrics.ScheduleFires.WithLabelValues("deferred").Inc()
				sc.log.InfoContext(ctx, "schedule fire deferred", "code", de.Code, "schedule", row.Name)
				return nil
			case errors.As(err, &de) && refusedForGood(de.Code):
				adv.LastError, outcome = de.Code, "refused"
				sc.log.WarnContext(ctx, "schedule fire refused", "code", de.Code, "schedule", row.Name)
			default:
				return err // the store is out of reach: the fire stays due
			}
		}
		qctx, cancel := sc.query(ctx)
		ok, err := sc.store.AdvanceSchedule(qctx, adv)
		cancel()
		if err != nil {
			return err
		}
		if !ok {
			// Another node advanced it, or an admin changed it, or (a
			// skip) the last task ended: the next tick reads it again.
			return nil
		}
		if plan.Dropped > 0 {
			sc.metrics.ScheduleFires.WithLabelValues("missed").Add(float64(plan.Dropped))
			sc.log.InfoContext(ctx, "schedule missed fire times", "schedule", row.Name, "count", plan.Dropped)
		}
		if outcome != "" {
			sc.metrics.ScheduleFires.WithLabelValues(outcome).Inc()
		}
		if adv.Run != nil {
			sc.log.DebugContext(ctx, "schedule fired", "schedule", row.Name, "task_id", adv.Run.TaskID, "tenant", row.Tenant)
		}
		version, next, lastErr = version+1, plan.Next, adv.LastError
	}
	return nil
}

// refusedForGood reports whether admission refused a fire for a reason
// that trying it again cannot change.
func refusedForGood(c dockettype.Code) bool {
	switch c {
	case dockettype.CodeUnknownWorkflow, dockettype.CodeInvalidRequest, dockettype.CodeIdempotencyConflict,
		dockettype.CodePayloadTooLarge:
		return true
	}
	return false
}

// cron returns the parsed expression of row, cached.
func (sc *ScheduleScheduler) cron(row *store.Schedule) (*cronSchedule, error) {
	key := [2]string{row.TimeZone, row.Cron}
	if cs, ok := sc.crons[key]; ok {
		return cs, nil
	}
	cs, err := parseCron(row.Cron, row.TimeZone)
	if err != nil {
		return nil, err
	}
	if len(sc.crons) >= 10_000 {
		clear(sc.crons)
	}
	sc.crons[key] = cs
	return cs, nil
}
