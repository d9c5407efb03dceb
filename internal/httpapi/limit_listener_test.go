package httpapi

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// With the cap reached, the listener accepts nothing more (a client waits
// in the backlog) until a connection closes.
func TestLimitListenerCapsOpenConnections(t *testing.T) {
	gauge := prometheus.NewGauge(prometheus.GaugeOpts{Name: "open"})
	full := make(chan struct{}, 8)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	ll := LimitListener(srv.Listener, 2, gauge).(*ConnLimiter)
	ll.full = func() { full <- struct{}{} }
	srv.Listener = ll
	srv.Start()
	defer srv.Close()

	get := func(c net.Conn) {
		t.Helper()
		if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	dial := func() net.Conn {
		c, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	a, b := dial(), dial()
	defer b.Close()
	get(a)
	get(b) // both accepted and served; they stay open (keep-alive)
	<-full // the accept loop now waits for a slot
	if n := testutil.ToFloat64(gauge); n != 2 {
		t.Fatalf("open connections = %v, want 2", n)
	}

	c := dial() // in the backlog: nothing accepts it while the cap holds
	defer c.Close()
	answered := make(chan struct{})
	go func() {
		defer close(answered)
		get(c)
	}()
	a.Close() // frees a slot: c is accepted and served
	<-answered
	<-full // and the loop waits again, with b and c open
	if n := testutil.ToFloat64(gauge); n != 2 {
		t.Fatalf("open connections = %v, want 2", n)
	}
}
