package faultcheck

import (
	"testing"
	"time"
)

// The schedules pass flags two tasks for one fire time, a task after the
// pause or off the cron expression, and a fire time without a task while
// a node and the database were up (any missing one for a catch-up
// schedule); a time missed while every node or the database was down is
// no anomaly for a skip schedule.
func TestCheckSchedules(t *testing.T) {
	t0 := time.Date(2026, 10, 12, 9, 0, 0, 0, time.UTC)
	sec := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Second) }
	fault := func(at time.Time, name string) Op {
		return Op{Kind: OpFault, Fault: name, Outcome: OK, Invoked: at, Complete: at}
	}
	full := func(from, to int) map[time.Time][]string {
		m := map[time.Time][]string{}
		for i := from; i <= to; i++ {
			m[sec(i)] = []string{"task"}
		}
		return m
	}
	for _, tc := range []struct {
		name  string
		ops   []Op
		view  ScheduleView
		twice int
		miss  int
	}{
		{name: "every time once", view: ScheduleView{First: sec(0), Until: sec(30), Fires: full(0, 30)}},
		{name: "a fire time twice", view: ScheduleView{First: sec(0), Until: sec(30),
			Fires: func() map[time.Time][]string { m := full(0, 30); m[sec(5)] = []string{"x", "y"}; return m }()}, twice: 1},
		{name: "a task after the pause and one off the cron", view: ScheduleView{First: sec(0), Until: sec(30),
			Fires: func() map[time.Time][]string {
				m := full(0, 30)
				m[sec(40)], m[sec(3).Add(time.Millisecond)] = []string{"late"}, []string{"odd"}
				return m
			}()}, twice: 2},
		{name: "skip: missing while the only node was up", view: ScheduleView{First: sec(0), Until: sec(30),
			Fires: func() map[time.Time][]string { m := full(0, 30); delete(m, sec(12)); return m }()}, miss: 1},
		{name: "skip: missing while the only node was down is owed nothing",
			ops: []Op{fault(sec(10), FaultKill+" a"), fault(sec(13), FaultStart+" a")},
			view: ScheduleView{First: sec(0), Until: sec(30),
				Fires: func() map[time.Time][]string { m := full(0, 30); delete(m, sec(9)); delete(m, sec(11)); return m }()}},
		{name: "skip: another node was up", ops: []Op{fault(sec(10), FaultKill+" a"), fault(sec(13), FaultStart+" a")},
			view: ScheduleView{First: sec(0), Until: sec(30), Nodes: []string{"a", "b"},
				Fires: func() map[time.Time][]string { m := full(0, 30); delete(m, sec(11)); return m }()}, miss: 1},
		{name: "skip: missing while the database was down is owed nothing",
			ops: []Op{fault(sec(10), FaultPGStop), fault(sec(12), FaultPGStart)},
			view: ScheduleView{First: sec(0), Until: sec(30), Nodes: []string{"a", "b"},
				Fires: func() map[time.Time][]string { m := full(0, 30); delete(m, sec(11)); return m }()}},
		{name: "catch up: every time is owed", ops: []Op{fault(sec(10), FaultKill+" a"), fault(sec(13), FaultStart+" a")},
			view: ScheduleView{CatchUp: true, First: sec(0), Until: sec(30),
				Fires: func() map[time.Time][]string { m := full(0, 30); delete(m, sec(11)); return m }()}, miss: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := tc.view
			v.Name = "s"
			if v.Nodes == nil {
				v.Nodes = []string{"a"}
			}
			r := Check(&CheckInput{Ops: tc.ops, Schedules: []ScheduleView{v}})
			if got := r.Anomalies[AnomalyScheduleTwice]; got != tc.twice {
				t.Errorf("fired twice = %d, want %d (%v)", got, tc.twice, r.Examples)
			}
			if got := r.Anomalies[AnomalyScheduleMissed]; got != tc.miss {
				t.Errorf("missed = %d, want %d (%v)", got, tc.miss, r.Examples)
			}
		})
	}
}
