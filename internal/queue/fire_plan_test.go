package queue

import (
	"testing"
	"time"

	"github.com/docket-dev/docket/internal/store"
)

func TestPlanFire(t *testing.T) {
	t.Parallel()
	everyMinute, err := parseCron("* * * * *", "UTC")
	if err != nil {
		t.Fatal(err)
	}
	at := func(s string) time.Time { return utc("2026-10-12T" + s + "Z") }
	const grace = 10 * time.Second
	for _, tc := range []struct {
		name        string
		next, now   string
		missed      string
		limit       int
		want        firePlan
		wantNothing bool
	}{
		{name: "not due yet", next: "09:01:00", now: "09:00:30", missed: store.MissedSkip, wantNothing: true},
		{name: "due, on time", next: "09:01:00", now: "09:01:00.2", missed: store.MissedSkip,
			want: firePlan{Fire: at("09:01:00"), Next: at("09:02:00")}},
		{name: "late within the grace is on time", next: "09:01:00", now: "09:01:10", missed: store.MissedSkip,
			want: firePlan{Fire: at("09:01:00"), Next: at("09:02:00")}},
		{name: "skip drops what was missed and fires the on-time time", next: "09:01:00", now: "09:10:05", missed: store.MissedSkip,
			want: firePlan{Dropped: 9, Fire: at("09:10:00"), Next: at("09:11:00")}},
		{name: "skip drops everything when nothing is on time", next: "09:01:00", now: "09:10:30", missed: store.MissedSkip,
			want: firePlan{Dropped: 10, Next: at("09:11:00")}},
		{name: "catch up fires the latest missed times, oldest first", next: "09:01:00", now: "09:10:30", missed: store.MissedCatchUp, limit: 3,
			want: firePlan{Dropped: 7, Fire: at("09:08:00"), Next: at("09:09:00")}},
		{name: "catch up with fewer missed than the limit fires them all", next: "09:08:00", now: "09:10:30", missed: store.MissedCatchUp, limit: 5,
			want: firePlan{Fire: at("09:08:00"), Next: at("09:09:00")}},
		{name: "catch up limit 0 means 1", next: "09:01:00", now: "09:10:30", missed: store.MissedCatchUp,
			want: firePlan{Dropped: 9, Fire: at("09:10:00"), Next: at("09:11:00")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := planFire(everyMinute, at(tc.next), at(tc.now), grace, tc.missed, tc.limit)
			if tc.wantNothing {
				if !got.Fire.IsZero() || got.Dropped != 0 {
					t.Errorf("plan = %+v, want nothing to do", got)
				}
				return
			}
			if got.Dropped != tc.want.Dropped || !got.Fire.Equal(tc.want.Fire) || !got.Next.Equal(tc.want.Next) {
				t.Errorf("plan = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// A catch-up after a gap is a run of steps: each plan made from the
// previous step's Next fires the following time, until the on-time one.
func TestPlanFireCatchUpSteps(t *testing.T) {
	t.Parallel()
	cs, _ := parseCron("* * * * *", "UTC")
	now := utc("2026-10-12T09:10:01Z")
	next := utc("2026-10-12T09:01:00Z")
	var fired []string
	var dropped int64
	for range 20 {
		p := planFire(cs, next, now, 10*time.Second, store.MissedCatchUp, 3)
		if p.Fire.IsZero() && p.Dropped == 0 {
			break
		}
		dropped += p.Dropped
		if !p.Fire.IsZero() {
			fired = append(fired, p.Fire.Format("15:04"))
		}
		next = p.Next
	}
	if want := []string{"09:07", "09:08", "09:09", "09:10"}; len(fired) != len(want) || fired[0] != want[0] || fired[3] != want[3] || dropped != 6 {
		t.Errorf("fired %v (dropped %d), want %v (dropped 6)", fired, dropped, want)
	}
}

// A very long gap is walked in bounded plans.
func TestPlanFireBoundsTheWalk(t *testing.T) {
	t.Parallel()
	cs, _ := parseCron("* * * * * *", "UTC")
	next := utc("2026-10-10T00:00:00Z")
	now := next.Add(48 * time.Hour) // 172,800 seconds
	p := planFire(cs, next, now, 10*time.Second, store.MissedSkip, 0)
	if p.Dropped != maxLateScan || !p.Fire.IsZero() || !p.Next.Equal(next.Add(maxLateScan*time.Second)) {
		t.Fatalf("first plan = %+v, want %d dropped and no fire", p, maxLateScan)
	}
	p = planFire(cs, p.Next, now, 10*time.Second, store.MissedSkip, 0)
	if want := int64(172_800 - maxLateScan - 10); p.Dropped != want || !p.Fire.Equal(now.Add(-10*time.Second)) {
		t.Fatalf("second plan = %+v, want %d dropped and the first on-time time fired", p, want)
	}
}
