package faultcheck

import (
	"sort"
	"strings"
	"time"
)

// ScheduleView is what one periodic schedule of a run made: its tasks by
// fire time (their run_at), read from the database after the run, and the
// window it fired in. The schedules fire every second.
type ScheduleView struct {
	Name string
	// CatchUp: missed "catch_up" (with a limit above any gap of the run):
	// every fire time of the window must have its task. Otherwise missed
	// "skip": a fire time must have its task when a node and the database
	// were up from it for Cover.
	CatchUp bool
	// First is the schedule's first fire time; Until the time it was
	// paused (after the drain): fire times up to Until-Slack must have
	// fired, none after Until+Slack may have.
	First, Until time.Time
	// Fires are the task IDs of each fire time.
	Fires map[time.Time][]string
	// Nodes names the run's servers (a, b, …), up from the run's start
	// unless the history says otherwise.
	Nodes []string
}

// Schedule check bounds.
const (
	// scheduleCover is how long a node and the database must have been up
	// from a fire time for a "skip" schedule to owe its task: the grace
	// (10 s) less a margin for a slow tick on a loaded machine.
	scheduleCover = 5 * time.Second
	// scheduleSlack is the margin around the pause at the window's end.
	scheduleSlack = 2 * time.Second
)

// checkSchedules: exactly one task per schedule and fire time, whatever
// the kills; no fire time missed while a node (and the database) was up
// (every fire time, with catch_up); none after the schedule was paused,
// and none at a time the cron expression does not name.
func checkSchedules(p *parsed, r *Result) {
	if len(p.in.Schedules) == 0 {
		return
	}
	for _, s := range p.in.Schedules {
		up := upIntervals(p.in.Ops, s.Nodes)
		times := make([]time.Time, 0, len(s.Fires))
		for t := range s.Fires {
			times = append(times, t)
		}
		sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
		for _, t := range times {
			ids := s.Fires[t]
			switch {
			case len(ids) > 1:
				r.flag(AnomalyScheduleTwice, "schedule %s made %d tasks for %s: %v", s.Name, len(ids), t.Format(time.RFC3339Nano), ids)
			case !t.Equal(t.Truncate(time.Second)) || t.Before(s.First):
				r.flag(AnomalyScheduleTwice, "schedule %s made task %s for %s, which is not one of its fire times", s.Name, ids[0], t.Format(time.RFC3339Nano))
			case t.After(s.Until.Add(scheduleSlack)):
				r.flag(AnomalyScheduleTwice, "schedule %s made task %s for %s, after it was paused at %s", s.Name, ids[0], t.Format(time.RFC3339), s.Until.Format(time.RFC3339Nano))
			}
		}
		for t := s.First; !t.After(s.Until.Add(-scheduleSlack)); t = t.Add(time.Second) {
			r.ScheduleFireTimes++
			if len(s.Fires[t]) > 0 {
				r.ScheduleFired++
				continue
			}
			if s.CatchUp || up.covers(t, t.Add(scheduleCover)) {
				r.flag(AnomalyScheduleMissed, "schedule %s has no task for %s, though a node and the database were up", s.Name, t.Format(time.RFC3339))
			}
		}
	}
}

// interval is [from, to); a zero from is the run's start, a zero to is
// open.
type interval struct{ from, to time.Time }

// upTimes are when each node was up and when the database was not.
type upTimes struct {
	nodes map[string][]interval
	dbOut []interval // PostgreSQL stopped
}

// upIntervals reads the kills and starts of the history: every node of
// nodes is up from the run's start until its first kill, and from each
// start to the next kill (a SIGSTOP counts as down too); the database is
// down from each pg-stop to the next pg-start.
func upIntervals(ops []Op, nodes []string) upTimes {
	u := upTimes{nodes: map[string][]interval{}}
	open := map[string]time.Time{} // node → up since
	for _, n := range nodes {
		open[n] = time.Time{}
	}
	var dbDown time.Time
	for _, op := range ops {
		if op.Kind != OpFault {
			continue
		}
		name, node, _ := strings.Cut(op.Fault, " ")
		switch name {
		case FaultKill, FaultTerm, FaultPause:
			if since, ok := open[node]; ok {
				u.nodes[node] = append(u.nodes[node], interval{from: since, to: op.Invoked})
				delete(open, node)
			}
		case FaultStart, FaultResume:
			if _, ok := open[node]; !ok {
				open[node] = op.Invoked
			}
		case FaultPGStop:
			dbDown = op.Invoked
		case FaultPGStart:
			if !dbDown.IsZero() {
				u.dbOut = append(u.dbOut, interval{from: dbDown, to: op.Invoked})
				dbDown = time.Time{}
			}
		}
	}
	for node, since := range open {
		u.nodes[node] = append(u.nodes[node], interval{from: since})
	}
	if !dbDown.IsZero() {
		u.dbOut = append(u.dbOut, interval{from: dbDown})
	}
	return u
}

// covers reports whether one node was up over all of [from, to] and the
// database was not stopped within it.
func (u upTimes) covers(from, to time.Time) bool {
	for _, out := range u.dbOut {
		if out.from.Before(to) && (out.to.IsZero() || out.to.After(from)) {
			return false
		}
	}
	for _, ivs := range u.nodes {
		for _, iv := range ivs {
			if !iv.from.After(from) && (iv.to.IsZero() || iv.to.After(to)) {
				return true
			}
		}
	}
	return false
}
