package httpapi

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// The window of GET /v1/admin/stats/throughput: minutes of history in
// buckets of bucket_seconds, at most maxThroughputBuckets of them.
const (
	defaultThroughputMinutes = 10
	maxThroughputMinutes     = 60
	defaultThroughputBucket  = 10 // seconds
	maxThroughputBuckets     = 360
)

// throughputBody is the answer of GET /v1/admin/stats/throughput.
type throughputBody struct {
	Since         time.Time              `json:"since"`
	Until         time.Time              `json:"until"`
	Now           time.Time              `json:"now"`
	BucketSeconds int                    `json:"bucket_seconds"`
	Buckets       []throughputBucketBody `json:"buckets"`
}

// throughputBucketBody counts the tasks that ended in [start,
// start+bucket_seconds), by state.
type throughputBucketBody struct {
	Start     time.Time `json:"start"`
	Succeeded int       `json:"succeeded"`
	Failed    int       `json:"failed"`
	TimedOut  int       `json:"timed_out"`
	Cancelled int       `json:"cancelled"`
}

// throughput serves GET /v1/admin/stats/throughput?minutes=&bucket_seconds=:
// the tasks of every node that became terminal, per bucket and state, from
// the task history. Buckets are whole multiples of bucket_seconds since the
// epoch, so that successive calls share them; the last one holds now and
// is counted up to now. The store reads the window's terminal events
// alone, through their time index.
func (s *server) throughput(w http.ResponseWriter, r *http.Request, _ dockettype.Principal) {
	q, err := queryParams(r, "minutes", "bucket_seconds")
	if err != nil {
		writeError(w, r, err)
		return
	}
	minutes, bucket := defaultThroughputMinutes, defaultThroughputBucket
	if v, ok := q["minutes"]; ok {
		if minutes, err = strconv.Atoi(v); err != nil || minutes < 1 || minutes > maxThroughputMinutes {
			writeError(w, r, invalidRequest(fmt.Sprintf("minutes must be an integer between 1 and %d", maxThroughputMinutes)))
			return
		}
	}
	if v, ok := q["bucket_seconds"]; ok {
		if bucket, err = strconv.Atoi(v); err != nil || bucket < 1 || bucket > minutes*60 {
			writeError(w, r, invalidRequest("bucket_seconds must be an integer between 1 and the window's seconds (minutes × 60)"))
			return
		}
	}
	n := minutes * 60 / bucket
	if minutes*60%bucket != 0 || n > maxThroughputBuckets {
		writeError(w, r, invalidRequest(fmt.Sprintf("bucket_seconds must divide the window (minutes × 60) into at most %d buckets", maxThroughputBuckets)))
		return
	}
	size := time.Duration(bucket) * time.Second
	now := s.clock.Now().UTC().Truncate(time.Millisecond)
	until := now.Truncate(size).Add(size)
	since := until.Add(-time.Duration(n) * size)
	buckets, err := s.adminStore.Throughput(r.Context(), &store.ThroughputParams{Since: since, Until: until, Bucket: size})
	if err != nil {
		writeError(w, r, s.adminStoreError(r.Context(), "throughput", err))
		return
	}
	out := throughputBody{Since: since, Until: until, Now: now, BucketSeconds: bucket, Buckets: make([]throughputBucketBody, len(buckets))}
	for i, b := range buckets {
		out.Buckets[i] = throughputBucketBody{Start: b.Start, Succeeded: b.Succeeded, Failed: b.Failed, TimedOut: b.TimedOut, Cancelled: b.Cancelled}
	}
	writeJSON(w, r, http.StatusOK, out)
}
