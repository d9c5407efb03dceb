package httpapi

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// limitedServer serves "ok" with Docket's timeouts on a ConnLimiter
// attached to the server, on clock.
func limitedServer(t *testing.T, lim ConnLimits) (*httptest.Server, func(int), *prometheus.CounterVec, chan struct{}) {
	srv, awaitOpen, shed, full, _ := limitedServerIdle(t, lim)
	return srv, awaitOpen, shed, full
}

// limitedServerIdle is limitedServer, with a function that waits until n
// connections are idle (the server marks a connection idle after the
// client may have read its answer).
func limitedServerIdle(t *testing.T, lim ConnLimits) (*httptest.Server, func(int), *prometheus.CounterVec, chan struct{}, func(int)) {
	t.Helper()
	shed := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shed"}, []string{"reason"})
	open := prometheus.NewGauge(prometheus.GaugeOpts{Name: "open"})
	lim.Shed, lim.Open = shed, open
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	srv := httptest.NewUnstartedServer(ok)
	srv.Config = NewServer(ok, nil)
	cl := NewConnLimiter(srv.Listener, lim)
	full := make(chan struct{}, 1)
	cl.full = func() {
		select {
		case full <- struct{}{}:
		default:
		}
	}
	cl.Attach(srv.Config)
	srv.Listener = cl
	srv.Start()
	t.Cleanup(srv.Close)
	// awaitOpen waits until n connections are accepted and open.
	awaitOpen := func(n int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for testutil.ToFloat64(open) != float64(n) {
			if time.Now().After(deadline) {
				t.Fatalf("%v connections open, want %d", testutil.ToFloat64(open), n)
			}
			time.Sleep(time.Millisecond)
		}
	}
	awaitIdle := func(n int) {
		t.Helper()
		count := func() int {
			cl.mu.Lock()
			defer cl.mu.Unlock()
			idle := 0
			for _, info := range cl.conns {
				if info.state == http.StateIdle {
					idle++
				}
			}
			return idle
		}
		deadline := time.Now().Add(10 * time.Second)
		for count() != n {
			if time.Now().After(deadline) {
				t.Fatalf("%d connections idle, want %d", count(), n)
			}
			time.Sleep(time.Millisecond)
		}
	}
	return srv, awaitOpen, shed, full, awaitIdle
}

// dialTo opens a raw connection to srv.
func dialTo(t *testing.T, srv *httptest.Server) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// getOn sends GET / on c and reads the answer: c then idles, kept alive.
func getOn(t *testing.T, c net.Conn) {
	t.Helper()
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	_ = c.SetReadDeadline(time.Time{})
}

// wantClosed checks that the server closed c (well before any of the
// server's own timeouts).
func wantClosed(t *testing.T, c net.Conn, what string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
	if n, err := c.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Errorf("%s: read %d bytes, %v; want the connection closed", what, n, err)
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// freshGet is a new client's GET / on a new connection, bounded by
// within: it must be answered.
func freshGet(t *testing.T, srv *httptest.Server, within time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/", nil)
	res, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatalf("a new client at the cap: %v (want an answer within %s)", err, within)
	}
	res.Body.Close()
}

// With the cap held by kept-alive connections that send nothing, a new
// client is answered at once: the longest idle connection gives way (the
// idle timeout is a minute).
func TestConnLimiterClosesIdleConnectionForNewOne(t *testing.T) {
	t.Parallel()
	srv, _, shed, _, awaitIdle := limitedServerIdle(t, ConnLimits{Max: 4, PerIP: -1})
	var idle []net.Conn
	for range 4 {
		c := dialTo(t, srv)
		getOn(t, c)
		idle = append(idle, c)
		awaitIdle(len(idle)) // in this order
	}
	freshGet(t, srv, 3*time.Second)
	if n := testutil.ToFloat64(shed.WithLabelValues(shedIdle)); n != 1 {
		t.Fatalf("%v idle connections closed, want 1", n)
	}
	wantClosed(t, idle[0], "the longest idle connection")
}

// With the cap held by connections that send no header, a new client
// waits at most NoHeaderGrace (the header timeout is 5 s): then the oldest
// silent connection gives way. Active connections never do.
func TestConnLimiterClosesSilentConnectionAfterGrace(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClock()
	srv, awaitOpen, shed, full := limitedServer(t, ConnLimits{Max: 2, PerIP: -1, Clock: clock})
	first := dialTo(t, srv)
	awaitOpen(1)
	clock.Advance(100 * time.Millisecond)
	second := dialTo(t, srv)
	io.WriteString(second, "GET / HTTP/1.1\r\nHost:") // part of a header
	awaitOpen(2)

	answered := make(chan struct{})
	go func() {
		defer close(answered)
		freshGet(t, srv, 10*time.Second)
	}()
	<-full // the new client is accepted and waits for a slot
	// Within the grace, nothing gives way.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := clock.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal(err)
	}
	clock.Advance(NoHeaderGrace - 200*time.Millisecond)
	select {
	case <-answered:
		t.Fatal("a silent connection was closed within the grace")
	case <-full: // looked again, closed nothing, waits again
	}
	if err := clock.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal(err)
	}
	clock.Advance(200 * time.Millisecond) // the first has had its grace
	<-answered
	if n := testutil.ToFloat64(shed.WithLabelValues(shedNoHeader)); n != 1 {
		t.Fatalf("%v silent connections closed, want 1", n)
	}
	wantClosed(t, first, "the oldest silent connection")
}

// One address holds at most PerIP connections: one more is answered 429
// and closed, unless one of that address's connections is idle, which
// gives way.
func TestConnLimiterCapsConnectionsPerAddress(t *testing.T) {
	t.Parallel()
	srv, awaitOpen, shed, _, awaitIdle := limitedServerIdle(t, ConnLimits{Max: 16, PerIP: 2})
	a, _ := dialTo(t, srv), dialTo(t, srv) // silent: they hold the address's two slots
	awaitOpen(2)
	over := dialTo(t, srv)
	io.WriteString(over, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	_ = over.SetReadDeadline(time.Now().Add(3 * time.Second))
	res, err := http.ReadResponse(bufio.NewReader(over), nil)
	if err != nil {
		t.Fatalf("a third connection of the address: %v, want a 429 answer", err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") != "1" {
		t.Errorf("a third connection of the address: %d, Retry-After %q; want 429 with Retry-After 1", res.StatusCode, res.Header.Get("Retry-After"))
	}
	wantClosed(t, over, "a third connection of the address")
	if n := testutil.ToFloat64(shed.WithLabelValues(shedPerIP)); n != 1 {
		t.Fatalf("%v connections refused over the per-address cap, want 1", n)
	}
	getOn(t, a) // a is now idle: it gives way to the next one
	awaitIdle(1)
	freshGet(t, srv, 3*time.Second)
	wantClosed(t, a, "the address's idle connection")
	if n := testutil.ToFloat64(shed.WithLabelValues(shedIdle)); n != 1 {
		t.Fatalf("%v idle connections closed, want 1", n)
	}
}

// Near the cap, kept-alive connections idle for NearCapIdleTimeout are
// closed when a new one arrives; below it they keep the idle timeout.
func TestConnLimiterShortensIdleTimeoutNearCap(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClock()
	srv, _, shed, _, awaitIdle := limitedServerIdle(t, ConnLimits{Max: 8, PerIP: -1, Clock: clock})
	var idle []net.Conn
	for range 5 {
		c := dialTo(t, srv)
		getOn(t, c)
		idle = append(idle, c)
	}
	awaitIdle(5)
	clock.Advance(NearCapIdleTimeout)
	getOn(t, dialTo(t, srv)) // 6 of 8: below 7/8, nothing closed
	if n := testutil.ToFloat64(shed.WithLabelValues(shedIdle)); n != 0 {
		t.Fatalf("%v idle connections closed below the near-cap mark", n)
	}
	getOn(t, dialTo(t, srv)) // 7 of 8: the five idle for 5 s are closed
	if n := testutil.ToFloat64(shed.WithLabelValues(shedIdle)); n != 5 {
		t.Fatalf("%v idle connections closed near the cap, want 5", n)
	}
	for _, c := range idle {
		wantClosed(t, c, "a connection idle for NearCapIdleTimeout near the cap")
	}
}
