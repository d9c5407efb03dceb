package httpapi_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/httpapi"
	"github.com/docket-dev/docket/internal/httpapi/httpapitest"
)

// echoOfSize is a POST /v1/tasks body of about n bytes.
func echoOfSize(n int) string {
	pad := n - len(`{"workflow":"demo.echo","input":{"s":""}}`)
	return `{"workflow":"demo.echo","input":{"s":"` + strings.Repeat("x", pad) + `"}}`
}

// awaitGauge polls read until it returns want (the handler's reservation
// happens on the server's goroutine), failing the test after 10 s.
func awaitGauge(t *testing.T, what string, read func() float64, want float64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for read() != want {
		if time.Now().After(deadline) {
			t.Fatalf("%s = %v, want %v", what, read(), want)
		}
		time.Sleep(time.Millisecond)
	}
}

// The server reads at most MaxBodyMemory bytes of request bodies at once:
// a body that does not fit beside those being read is refused at once with
// 429 too_many_requests and Retry-After, unread; one that fits goes
// through; once the bodies being read are done, the refused one passes. A
// body that sends no Content-Length is charged its route's limit. When the
// burst ends, the freed memory is returned to the operating system.
func TestBodyMemoryBudgetRefusesBodiesOverIt(t *testing.T) {
	t.Parallel()
	const budget = 64 << 10
	var freed atomic.Int32
	s := httpapitest.New(t, httpapitest.Options{API: httpapi.Options{
		MaxBodyMemory: budget, MaxBodyBytes: 32 << 10, FreeMemory: func() { freed.Add(1) },
	}})
	reserved := func() float64 { return testutil.ToFloat64(s.Metrics.HTTPBodyBytes) }

	// A batch of 48 KiB whose body arrives slowly: it holds 48 KiB.
	slowBody := fmt.Sprintf(`{"tasks":[{"idempotency_key":"slow","workflow":"demo.echo","input":{"s":"%s"}}]}`, strings.Repeat("y", 48<<10-100))
	pr, pw := io.Pipe()
	req, err := http.NewRequest(http.MethodPost, s.URL+"/v1/tasks/batch", pr)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = int64(len(slowBody))
	req.Header.Set("Authorization", "Bearer "+s.Key)
	slow := make(chan *http.Response, 1)
	go func() {
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			res = nil
		}
		slow <- res
	}()
	if _, err := io.WriteString(pw, slowBody[:100]); err != nil {
		t.Fatal(err)
	}
	awaitGauge(t, "bytes reserved while the slow batch is read", reserved, float64(len(slowBody)))

	// 24 KiB more does not fit: refused, nothing admitted.
	big := echoOfSize(24 << 10)
	r := call(t, s.URL, request{method: http.MethodPost, path: "/v1/tasks", key: s.Key, body: big,
		header: map[string]string{"Idempotency-Key": "big"}})
	r.wantError(t, http.StatusTooManyRequests, dockettype.CodeTooManyRequests)
	if got := r.header.Get("Retry-After"); got != "1" {
		t.Errorf("Retry-After = %q, want 1", got)
	}
	// A body without Content-Length is charged the route's limit (32 KiB):
	// it does not fit either.
	chunked, err := http.NewRequest(http.MethodPost, s.URL+"/v1/tasks", io.MultiReader(strings.NewReader(echoOfSize(1<<10))))
	if err != nil {
		t.Fatal(err)
	}
	chunked.Header.Set("Authorization", "Bearer "+s.Key)
	chunked.Header.Set("Idempotency-Key", "chunked")
	res, err := http.DefaultClient.Do(chunked)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") == "" {
		t.Errorf("a body of unknown length beside the slow batch: %d, Retry-After %q; want 429 with Retry-After",
			res.StatusCode, res.Header.Get("Retry-After"))
	}
	// 8 KiB fits beside the 48.
	mustSubmit(t, s.URL, s.Key, "small", echoOfSize(8<<10))
	if n := freed.Load(); n != 0 {
		t.Fatalf("memory returned %d times while a body is being read", n)
	}

	// The slow batch ends; then the refused body goes through.
	if _, err := io.WriteString(pw, slowBody[100:]); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	if res := <-slow; res != nil {
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("the slow batch: %d, want 200", res.StatusCode)
		}
	}
	awaitGauge(t, "bytes reserved after the requests", reserved, 0)
	awaitGauge(t, "memory returns after the burst", func() float64 { return float64(freed.Load()) }, 1)
	mustSubmit(t, s.URL, s.Key, "big", big)
}

// A body that declares more than its route's limit is refused with 413
// before any of it is read or reserved.
func TestDeclaredOversizeBodyIsRefusedUnread(t *testing.T) {
	t.Parallel()
	s := httpapitest.New(t, httpapitest.Options{API: httpapi.Options{MaxBodyBytes: 1 << 10}})
	pr, pw := io.Pipe()
	defer pw.Close()
	req, err := http.NewRequest(http.MethodPost, s.URL+"/v1/tasks", pr)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = 2 << 10 // nothing of it is ever sent
	req.Header.Set("Authorization", "Bearer "+s.Key)
	req.Header.Set("Idempotency-Key", "k")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d, want 413", res.StatusCode)
	}
	if n := testutil.ToFloat64(s.Metrics.HTTPBodyBytes); n != 0 {
		t.Fatalf("%v bytes reserved", n)
	}
}

// A client still writing a body the server refused early reads the answer,
// not a reset connection: the server lingers, reading and discarding the
// rest, before it closes. The bodies here are far larger than what the
// sockets buffer, so that a server closing at once resets the connection
// while the client writes (TestSubmitBatchRefusedWhole saw it now and then
// with a 130 KiB body).
func TestEarlyAnswerReachesAClientStillSendingItsBody(t *testing.T) {
	t.Parallel()
	s := httpapitest.New(t, httpapitest.Options{Queue: queuedOnly, API: httpapi.Options{MaxBodyBytes: 1 << 10}})
	big := `{"workflow":"demo.echo","input":"` + strings.Repeat("x", 900<<10) + `"}`
	for i := range 10 {
		// Declared too large (refused unread), then of unknown length
		// (refused once the limit is read).
		submit(t, s.URL, s.Key, fmt.Sprint("declared-", i), big).wantError(t, http.StatusRequestEntityTooLarge, dockettype.CodePayloadTooLarge)
		req, err := http.NewRequest(http.MethodPost, s.URL+"/v1/tasks", io.MultiReader(strings.NewReader(big)))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+s.Key)
		req.Header.Set("Idempotency-Key", fmt.Sprint("chunked-", i))
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("a body of unknown length: %v", err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("a body of unknown length: status %d, want 413", res.StatusCode)
		}
	}
}
