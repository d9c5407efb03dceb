package httpapi_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/httpapi"
	"github.com/docket-dev/docket/internal/logtest"
	"github.com/docket-dev/docket/internal/metrics"
)

// guard bounds how long a test waits for the server to do something that
// should be immediate; it only turns a hang into a failure.
const guard = 20 * time.Second

// dial opens a raw connection to a test server.
func dial(t *testing.T, srv *httptest.Server) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// readAnswer reads one HTTP answer from c and reports whether the server
// then closed the connection.
func readAnswer(t *testing.T, c net.Conn) (*http.Response, string, bool) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(guard))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("read the answer: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("read the answer's body: %v", err)
	}
	_, err = br.ReadByte()
	return resp, string(body), err == io.EOF
}

// An error answered before the body is read closes the connection at
// once: the server does not wait for a body it will not use.
func TestEarlyErrorClosesConnection(t *testing.T) {
	t.Parallel()
	srv, _, _ := fakeServer(t, &fakeExecutor{})
	for _, head := range []string{
		// No key: 401 before the body.
		"POST /v1/tasks HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\nIdempotency-Key: k\r\n\r\n",
		// No Idempotency-Key: 400 before the body.
		"POST /v1/tasks HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer dk_test\r\nContent-Length: 100\r\n\r\n",
		// A chunked body, never sent.
		"POST /v1/tasks HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
	} {
		c := dial(t, srv)
		if _, err := io.WriteString(c, head+"{"); err != nil {
			t.Fatal(err)
		}
		resp, _, closed := readAnswer(t, c)
		if resp.StatusCode/100 != 4 || !resp.Close || !closed {
			t.Errorf("%q: status %d, Connection: close %v, closed %v; want a 4xx, Connection: close, and the connection closed",
				head, resp.StatusCode, resp.Close, closed)
		}
	}
	// A request whose body was read keeps its connection.
	c := dial(t, srv)
	io.WriteString(c, "POST /v1/tasks HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer dk_test\r\nIdempotency-Key: k\r\n"+
		"Content-Length: 2\r\n\r\n{}")
	_ = c.SetReadDeadline(time.Now().Add(guard))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || resp.Close {
		t.Errorf("a 400 after the whole body: status %d, Connection: close %v; want the connection kept", resp.StatusCode, resp.Close)
	}
}

// A body that does not arrive within the body timeout is cut off: 400,
// Connection: close, and the connection is closed.
func TestSlowBodyIsCutOff(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClock()
	srv, _, _ := fakeServerWith(t, &fakeExecutor{}, httpapi.Options{Clock: clock, BodyTimeout: 30 * time.Second})
	c := dial(t, srv)
	io.WriteString(c, "POST /v1/tasks HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer dk_test\r\nIdempotency-Key: k\r\n"+
		"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"workflow\":")
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	if err := clock.BlockUntilContext(ctx, 1); err != nil { // the request's body timer
		t.Fatal(err)
	}
	clock.Advance(30 * time.Second)
	resp, body, closed := readAnswer(t, c)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, `"invalid_request"`) ||
		!strings.Contains(body, "did not arrive within 30s") || !resp.Close || !closed {
		t.Fatalf("status %d, body %s, Connection: close %v, closed %v", resp.StatusCode, body, resp.Close, closed)
	}
}

// hardenedServer serves h the way docket serve does: httpapi.NewServer on a
// LimitListener of max connections.
func hardenedServer(t *testing.T, h http.Handler, max int, m *metrics.Metrics) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.Config = httpapi.NewServer(h, nil)
	srv.Listener = httpapi.LimitListener(srv.Listener, max, m.HTTPConnections)
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// 1,000 clients that send their headers and then trickle their bodies do
// not keep a normal request from being answered, and each of them is cut
// off once the body timeout passes.
func TestSlowBodiesDoNotStarveOthers(t *testing.T) {
	t.Parallel()
	const slow = 1000
	clock := clockwork.NewFakeClock()
	logger, _ := logtest.New(t)
	m := metrics.New()
	api := httpapi.New(&fakeExecutor{get: func(context.Context, string) (*dockettype.Task, error) {
		return &dockettype.Task{ID: "t1", State: dockettype.StateQueued}, nil
	}}, fakeAuth{}, httpapi.Options{Logger: logger, Metrics: m, Clock: clock, BodyTimeout: 30 * time.Second})
	arrived := make(chan struct{}, slow)
	srv := hardenedServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Slow") != "" {
			arrived <- struct{}{}
		}
		api.ServeHTTP(w, r)
	}), httpapi.DefaultMaxConnections, m)

	conns := make([]net.Conn, slow)
	for i := range conns {
		conns[i] = dial(t, srv)
		if _, err := io.WriteString(conns[i], "POST /v1/tasks HTTP/1.1\r\nHost: x\r\nX-Slow: 1\r\nAuthorization: Bearer dk_test\r\n"+
			"Idempotency-Key: k\r\nContent-Length: 1000\r\n\r\n{"); err != nil {
			t.Fatal(err)
		}
	}
	for range slow {
		<-arrived
	}
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	if err := clock.BlockUntilContext(ctx, slow); err != nil { // every slow body is being waited for
		t.Fatal(err)
	}
	if n := testutil.ToFloat64(m.HTTPConnections); n != slow {
		t.Errorf("open connections = %v, want %d", n, slow)
	}

	// A normal client is served at once.
	r := callContext(t, ctx, srv.URL, request{method: http.MethodGet, path: "/v1/tasks/t1", key: "dk_test"})
	r.wantStatus(t, http.StatusOK)

	// Then the slow ones are cut off.
	clock.Advance(30 * time.Second)
	var wg sync.WaitGroup
	errs := make(chan string, slow)
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.SetReadDeadline(time.Now().Add(guard))
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				errs <- err.Error()
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if _, err := br.ReadByte(); resp.StatusCode != http.StatusBadRequest || err != io.EOF {
				errs <- fmt.Sprintf("status %d, then %v", resp.StatusCode, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Errorf("a slow connection: %s", e)
	}
}

// The server's timeouts are set (headers, whole exchange, idle), and a
// client that never finishes its headers is dropped.
func TestServerTimeouts(t *testing.T) {
	t.Parallel()
	cfg := httpapi.NewServer(http.NotFoundHandler(), nil)
	if cfg.ReadHeaderTimeout != httpapi.ReadHeaderTimeout || cfg.WriteTimeout <= httpapi.MaxWait ||
		cfg.IdleTimeout != httpapi.IdleTimeout || cfg.ReadTimeout != 0 || cfg.MaxHeaderBytes != httpapi.MaxHeaderBytes {
		t.Fatalf("server timeouts = header %s, write %s, idle %s, read %s, header bytes %d",
			cfg.ReadHeaderTimeout, cfg.WriteTimeout, cfg.IdleTimeout, cfg.ReadTimeout, cfg.MaxHeaderBytes)
	}
	// The same server with a short header timeout, so the test is quick.
	srv := httptest.NewUnstartedServer(http.NotFoundHandler())
	srv.Config = httpapi.NewServer(http.NotFoundHandler(), nil)
	srv.Config.ReadHeaderTimeout = 100 * time.Millisecond
	srv.Start()
	t.Cleanup(srv.Close)
	c := dial(t, srv)
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n") // headers never end
	_ = c.SetReadDeadline(time.Now().Add(guard))
	if _, err := io.ReadAll(c); err != nil {
		t.Fatalf("a client that never finishes its headers was not dropped: %v", err)
	}
}
