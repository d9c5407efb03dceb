package queue

import (
	"time"

	"github.com/docket-dev/docket/internal/store"
)

// maxLateScan bounds how many missed fire times one plan walks through
// (a schedule every second missed for a day is 86,400 of them). Past it,
// the plan drops what it walked and the next plan goes on from there; a
// catch-up then fires the latest of the rest.
const maxLateScan = 100_000

// firePlan is the next step for one due schedule: drop the Dropped missed
// fire times before Fire, then handle Fire (zero: nothing to fire now),
// after which the schedule's next fire time is Next.
type firePlan struct {
	Dropped int64
	Fire    time.Time
	Next    time.Time
}

// planFire decides the next step of a schedule whose next fire time is
// next, at now. A due fire time is on time while now is at most grace past
// it, and missed after that. Missed times are dropped with MissedSkip;
// with MissedCatchUp the latest catchUpLimit of them fire, oldest first,
// and the earlier ones are dropped. On-time times always fire, in order.
//
// The times to fire are a suffix of the due times, so every step is "drop
// a prefix, fire the next one": after Fire, the plan made from Next goes
// on with the time after it.
func planFire(cs *cronSchedule, next, now time.Time, grace time.Duration, missed string, catchUpLimit int) firePlan {
	if next.After(now) {
		return firePlan{Next: next}
	}
	keep := 0
	if missed == store.MissedCatchUp {
		keep = max(catchUpLimit, 1)
	}
	// ring holds the latest keep missed times seen.
	ring := make([]time.Time, 0, keep)
	var late int64
	t := next
	for ; !t.After(now) && now.Sub(t) > grace; t = cs.next(t) {
		late++
		if keep > 0 {
			if len(ring) < keep {
				ring = append(ring, t)
			} else {
				ring[int(late-1)%keep] = t
			}
		}
		if late == maxLateScan {
			return firePlan{Dropped: late, Next: cs.next(t)}
		}
	}
	if keep > 0 && late > 0 {
		oldest := ring[0]
		if len(ring) == keep {
			oldest = ring[int(late)%keep]
		}
		return firePlan{Dropped: late - int64(len(ring)), Fire: oldest, Next: cs.next(oldest)}
	}
	if t.After(now) { // every due time was missed (and dropped)
		return firePlan{Dropped: late, Next: t}
	}
	return firePlan{Dropped: late, Fire: t, Next: cs.next(t)}
}
