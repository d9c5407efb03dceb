package httpapi_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/httpapi"
	"github.com/docket-dev/docket/internal/httpapi/httpapitest"
	"github.com/docket-dev/docket/internal/store"
)

type throughputAnswer struct {
	Since         time.Time `json:"since"`
	Until         time.Time `json:"until"`
	Now           time.Time `json:"now"`
	BucketSeconds int       `json:"bucket_seconds"`
	Buckets       []struct {
		Start     time.Time `json:"start"`
		Succeeded int       `json:"succeeded"`
		Failed    int       `json:"failed"`
		TimedOut  int       `json:"timed_out"`
		Cancelled int       `json:"cancelled"`
	} `json:"buckets"`
}

// GET /v1/admin/stats/throughput counts the tasks that ended, per bucket
// of the window whose last bucket holds now, whichever node ended them:
// tasks submitted through the API end at known times through this node's
// store and another node's.
func TestAdminThroughput(t *testing.T) {
	t.Parallel()
	httpapitest.ForEachDatabase(t, func(t *testing.T, db httpapitest.Database) {
		t.Parallel()
		// The server's clock: 25.3 s into a minute.
		now := time.Date(2026, 3, 1, 12, 0, 25, 300_000_000, time.UTC)
		s := httpapitest.New(t, httpapitest.Options{Store: db.Open(t), Queue: queuedOnly, API: httpapi.Options{Clock: clockwork.NewFakeClockAt(now)}})
		other := db.Open(t) // another node
		admin := s.NewAdminKeyFor(t, "ops", "root")
		for i := range 5 {
			mustSubmit(t, s.URL, s.Key, fmt.Sprintf("k%d", i), echoBody)
		}
		claimed, err := s.Store.Claim(t.Context(), &store.ClaimParams{Now: time.Now(), Queue: store.PoolQueue(dockettype.PoolOnline),
			Owner: "node-1", Limit: 5, LeaseTTL: time.Hour})
		if err != nil || len(claimed) != 5 {
			t.Fatalf("claim: %d tasks, %v", len(claimed), err)
		}
		end := func(st store.Store, at time.Time, c *store.ClaimedTask, kind store.FinishKind) {
			t.Helper()
			item := store.FinishItem{Lease: c.Lease(), Kind: kind, Result: []byte(`{}`)}
			if kind == store.FinishFail {
				item.Code = dockettype.CodeWorkflowError
			}
			res, err := st.Finish(t.Context(), &store.FinishParams{Now: at, Items: []store.FinishItem{item}})
			if err != nil || !res[0].Applied {
				t.Fatalf("finish %s: %+v, %v", c.Task.ID, res, err)
			}
		}
		end(s.Store, now.Add(-2*time.Minute), claimed[0], store.FinishSucceed) // before the one-minute window
		end(other, now.Add(-50*time.Second), claimed[1], store.FinishSucceed)  // 11:59:35.3
		end(s.Store, now.Add(-12*time.Second), claimed[2], store.FinishFail)   // 12:00:13.3
		end(other, now.Add(-time.Second), claimed[3], store.FinishSucceed)     // 12:00:24.3
		end(s.Store, now, claimed[4], store.FinishSucceed)                     // 12:00:25.3

		get := func(query string) throughputAnswer {
			t.Helper()
			r := call(t, s.URL, request{method: http.MethodGet, path: "/v1/admin/stats/throughput" + query, key: admin})
			r.wantStatus(t, http.StatusOK)
			var got throughputAnswer
			r.decode(t, &got)
			return got
		}
		minute := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		got := get("?minutes=1&bucket_seconds=10")
		if !got.Since.Equal(minute.Add(-30*time.Second)) || !got.Until.Equal(minute.Add(30*time.Second)) || !got.Now.Equal(now) ||
			got.BucketSeconds != 10 || len(got.Buckets) != 6 {
			t.Fatalf("window = %s to %s at %s by %d s, %d buckets; want 11:59:30 to 12:00:30 at 12:00:25.3 by 10 s, 6 buckets",
				got.Since, got.Until, got.Now, got.BucketSeconds, len(got.Buckets))
		}
		want := [][2]int{{1, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 1}, {2, 0}} // succeeded, failed
		for i, b := range got.Buckets {
			if !b.Start.Equal(got.Since.Add(time.Duration(i)*10*time.Second)) || b.Succeeded != want[i][0] || b.Failed != want[i][1] ||
				b.TimedOut != 0 || b.Cancelled != 0 {
				t.Errorf("bucket %d = %+v, want start %s, %d succeeded, %d failed", i, b, got.Since.Add(time.Duration(i)*10*time.Second), want[i][0], want[i][1])
			}
		}

		// One bucket of a minute: this minute's.
		got = get("?minutes=1&bucket_seconds=60")
		if len(got.Buckets) != 1 || !got.Buckets[0].Start.Equal(minute) || got.Buckets[0].Succeeded != 2 || got.Buckets[0].Failed != 1 {
			t.Errorf("this minute = %+v, want 2 succeeded and 1 failed from 12:00", got.Buckets)
		}

		// The defaults: ten minutes by 10 s, every task.
		got = get("")
		total := 0
		for _, b := range got.Buckets {
			total += b.Succeeded + b.Failed
		}
		if got.BucketSeconds != 10 || len(got.Buckets) != 60 || !got.Since.Equal(minute.Add(-570*time.Second)) || total != 5 {
			t.Errorf("defaults: %d buckets of %d s from %s, %d tasks; want 60 of 10 s from 11:50:30, 5 tasks", len(got.Buckets), got.BucketSeconds, got.Since, total)
		}
	})
}

// The window's parameters are bounded: anything else is 400
// invalid_request, before the store is asked.
func TestAdminThroughputRefusesBadWindows(t *testing.T) {
	t.Parallel()
	s := httpapitest.New(t, httpapitest.Options{Queue: queuedOnly})
	admin := s.NewAdminKeyFor(t, "ops", "root")
	for _, q := range []string{
		"minutes=0", "minutes=61", "minutes=-5", "minutes=ten", "minutes=1.5", "minutes=",
		"bucket_seconds=0", "bucket_seconds=7", "bucket_seconds=601", "minutes=1&bucket_seconds=120",
		"minutes=60&bucket_seconds=5", "minutes=1&minutes=2", "tenant=acme", "minutes=%zz",
	} {
		r := call(t, s.URL, request{method: http.MethodGet, path: "/v1/admin/stats/throughput?" + q, key: admin})
		if r.status != http.StatusBadRequest {
			t.Errorf("?%s = %d %s, want 400", q, r.status, r.body)
			continue
		}
		r.wantError(t, http.StatusBadRequest, dockettype.CodeInvalidRequest)
	}
	for _, q := range []string{"minutes=60&bucket_seconds=10", "minutes=30&bucket_seconds=5", "minutes=1&bucket_seconds=1", "minutes=60&bucket_seconds=3600"} {
		call(t, s.URL, request{method: http.MethodGet, path: "/v1/admin/stats/throughput?" + q, key: admin}).wantStatus(t, http.StatusOK)
	}
}
