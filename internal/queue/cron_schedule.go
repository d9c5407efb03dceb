package queue

import (
	"errors"
	"fmt"
	"strings"
	"time"
	_ "time/tzdata" // time zones do not depend on the host's zoneinfo

	"github.com/robfig/cron/v3"
)

// cronParser reads the five standard fields with an optional leading
// seconds field, and the descriptors (@hourly, @every 90s, …).
var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// never stands for "no next fire time" in the store (a column that is
// never null). parseCron refuses expressions that never fire, so it is a
// safeguard only.
var never = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// cronSchedule is a parsed cron expression in its time zone.
//
// Fire times follow robfig/cron in the zone, with one correction: a
// schedule at fixed hours fires once at a wall-clock time that a
// daylight-saving change makes occur twice (01:30 on the autumn night in
// New York fires at 01:30 EDT only), as cron daemons do. A schedule that
// runs every hour keeps both, since they are an hour of real time apart.
// A wall-clock time that does not exist that day (02:30 on the spring
// night in New York) does not fire that day.
type cronSchedule struct {
	sched cron.Schedule
	loc   *time.Location
	// once: the schedule does not fire every hour, so a repeated
	// wall-clock time fires once.
	once bool
}

// parseCron parses expr in the zone named tz ("" is UTC). Its errors are
// messages for the admin who wrote them.
func parseCron(expr, tz string) (*cronSchedule, error) {
	if tz == "" {
		tz = "UTC"
	}
	if tz == "Local" {
		return nil, errors.New(`time_zone must be an IANA name such as "Europe/Paris" or "UTC" ("Local" depends on the machine)`)
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return nil, fmt.Errorf("time_zone %q is not a known IANA time zone", tz)
	}
	if strings.Contains(expr, "TZ=") {
		return nil, errors.New("cron must not name a time zone (CRON_TZ=, TZ=): use time_zone")
	}
	// The expression is interpreted in loc: prefix it the way robfig/cron
	// expects, so that the parser resolves times in the zone.
	sched, err := cronParser.Parse("CRON_TZ=" + tz + " " + expr)
	if err != nil {
		return nil, fmt.Errorf("cron %s: %v (want 5 fields, or 6 with seconds first, or a descriptor such as @hourly)", quoteExpr(expr), err)
	}
	cs := &cronSchedule{sched: sched, loc: loc}
	if spec, ok := sched.(*cron.SpecSchedule); ok {
		const allHours = 1<<24 - 1
		cs.once = spec.Hour&allHours != allHours
	}
	return cs, nil
}

// quoteExpr quotes an expression for an error message, cut short.
func quoteExpr(expr string) string {
	if len(expr) > 64 {
		expr = expr[:64] + "…"
	}
	return fmt.Sprintf("%q", expr)
}

// next is the first fire time strictly after t, in UTC; never when there
// is none.
func (c *cronSchedule) next(t time.Time) time.Time {
	n := c.sched.Next(t.In(c.loc))
	for c.once && !n.IsZero() && repeatsWallClock(n) {
		n = c.sched.Next(n)
	}
	if n.IsZero() {
		return never
	}
	return n.UTC()
}

// nextN returns the first n fire times from first (included when it is
// not never).
func (c *cronSchedule) nextN(first time.Time, n int) []time.Time {
	out := make([]time.Time, 0, n)
	for t := first; len(out) < n && t.Before(never); t = c.next(t) {
		out = append(out, t.UTC())
	}
	return out
}

// repeatsWallClock reports whether t's wall-clock time already happened a
// daylight-saving shift earlier (30 min, 1 h or 2 h: every shift in use).
func repeatsWallClock(t time.Time) bool {
	wall := func(t time.Time) [6]int {
		y, mo, d := t.Date()
		h, mi, s := t.Clock()
		return [6]int{y, int(mo), d, h, mi, s}
	}
	w := wall(t)
	for _, shift := range []time.Duration{30 * time.Minute, time.Hour, 2 * time.Hour} {
		if wall(t.Add(-shift)) == w {
			return true
		}
	}
	return false
}
