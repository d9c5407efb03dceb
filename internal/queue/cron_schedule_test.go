package queue

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

// Fire times across the daylight-saving changes of 2026 in New York
// (spring forward 8 March 02:00 → 03:00, fall back 1 November 02:00 →
// 01:00), against robfig/cron's reading with the repeated-hour
// correction.
func TestCronScheduleAcrossDST(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, cron string
		from       string
		want       []string
	}{
		{"a daily time that does not exist on the spring day is not fired that day", "30 2 * * *", "2026-03-07T00:00:00Z",
			[]string{"2026-03-07T07:30:00Z", "2026-03-09T06:30:00Z", "2026-03-10T06:30:00Z"}},
		{"a daily time the autumn night repeats fires once, at its first occurrence", "30 1 * * *", "2026-10-31T00:00:00Z",
			[]string{"2026-10-31T05:30:00Z", "2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z", "2026-11-03T06:30:00Z"}},
		{"an hourly schedule keeps both 01:00s, an hour of real time apart", "0 * * * *", "2026-11-01T03:30:00Z",
			[]string{"2026-11-01T04:00:00Z", "2026-11-01T05:00:00Z", "2026-11-01T06:00:00Z", "2026-11-01T07:00:00Z"}},
		{"a daily time outside the change is the same wall-clock time on both sides", "0 9 * * *", "2026-10-31T00:00:00Z",
			[]string{"2026-10-31T13:00:00Z", "2026-11-01T14:00:00Z", "2026-11-02T14:00:00Z"}},
		{"seconds field", "*/20 * * * * *", "2026-10-31T00:00:00Z",
			[]string{"2026-10-31T00:00:20Z", "2026-10-31T00:00:40Z", "2026-10-31T00:01:00Z"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs, err := parseCron(tc.cron, "America/New_York")
			if err != nil {
				t.Fatal(err)
			}
			got := cs.nextN(cs.next(utc(tc.from)), len(tc.want))
			var gotS []string
			for _, g := range got {
				gotS = append(gotS, g.Format(time.RFC3339))
			}
			if !slices.Equal(gotS, tc.want) {
				t.Errorf("%s from %s:\n got %v\nwant %v", tc.cron, tc.from, gotS, tc.want)
			}
		})
	}
}

func TestParseCronRefusals(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ cron, tz, want string }{
		{"* * * *", "UTC", "want 5 fields"},
		{"61 * * * *", "UTC", "cron"},
		{"* * * * *", "Mars/Olympus", "not a known IANA time zone"},
		{"* * * * *", "Local", "IANA"},
		{"CRON_TZ=UTC * * * * *", "UTC", "use time_zone"},
	} {
		if _, err := parseCron(tc.cron, tc.tz); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseCron(%q, %q) = %v, want an error with %q", tc.cron, tc.tz, err, tc.want)
		}
	}
	for _, ok := range []string{"@hourly", "@every 90s", "0 0 9 * * MON-FRI", "*/5 * * * *"} {
		if _, err := parseCron(ok, "Europe/Paris"); err != nil {
			t.Errorf("parseCron(%q): %v", ok, err)
		}
	}
}
