//go:build unix

package faultcheck

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"go.uber.org/goleak"

	"github.com/docket-dev/docket/client"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// echoServer answers every line with the same line.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return ln.Addr().String()
}

func roundTrip(t *testing.T, c net.Conn, r *bufio.Reader, line string) (string, error) {
	t.Helper()
	if _, err := io.WriteString(c, line+"\n"); err != nil {
		return "", err
	}
	got, err := r.ReadString('\n')
	return got, err
}

func TestTCPProxyResets(t *testing.T) {
	p, err := NewTCPProxy(echoServer(t), clockwork.NewRealClock())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	if got, err := roundTrip(t, c, r, "hello"); err != nil || got != "hello\n" {
		t.Fatalf("through the proxy: %q, %v", got, err)
	}
	if n := p.ResetAll(); n != 1 {
		t.Fatalf("ResetAll reset %d connections, want 1", n)
	}
	if _, err := r.ReadString('\n'); err == nil {
		t.Fatal("a reset connection still reads")
	}
	// New connections work again.
	c2, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if got, err := roundTrip(t, c2, bufio.NewReader(c2), "again"); err != nil || got != "again\n" {
		t.Fatalf("after the reset: %q, %v", got, err)
	}
	if resets, _ := p.Counts(); resets != 1 {
		t.Fatalf("resets = %d, want 1", resets)
	}
}

// stalledProxy starts a proxy on clock in front of an echo server, sends a
// line through it, stalls it for d and checks that a second line ("held")
// does not come back while it stalls. It returns the proxy and the reader
// on which the held line arrives once the stall ends.
func stalledProxy(t *testing.T, clock clockwork.Clock, d time.Duration) (*TCPProxy, *bufio.Reader) {
	t.Helper()
	p, err := NewTCPProxy(echoServer(t), clock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	r := bufio.NewReader(c)
	if got, err := roundTrip(t, c, r, "before"); err != nil || got != "before\n" {
		t.Fatalf("through the proxy: %q, %v", got, err)
	}
	p.Stall(d)
	// Nothing comes back while the proxy stalls (a bounded wait for
	// something that must not happen).
	if err := c.SetReadDeadline(time.Now().Add(200 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if got, err := roundTrip(t, c, r, "held"); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("during the stall: %q, %v; want the read to time out", got, err)
	}
	if err := c.SetReadDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	return p, r
}

func TestTCPProxyStallHoldsTrafficUntilHealed(t *testing.T) {
	p, r := stalledProxy(t, clockwork.NewRealClock(), time.Hour)
	p.Heal()
	if got, err := r.ReadString('\n'); err != nil || got != "held\n" {
		t.Fatalf("after the stall: %q, %v; want the held line", got, err)
	}
}

// A stall ends by itself when its time has passed on the proxy's clock.
func TestTCPProxyStallEndsWhenItsTimePasses(t *testing.T) {
	clock := clockwork.NewFakeClock()
	_, r := stalledProxy(t, clock, time.Minute)
	clock.Advance(time.Minute)
	if got, err := r.ReadString('\n'); err != nil || got != "held\n" {
		t.Fatalf("after the stall's minute: %q, %v; want the held line", got, err)
	}
}

func TestResponseDropperMakesAmbiguousCommits(t *testing.T) {
	var committed atomic.Int32
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		committed.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(map[string]any{"id": "task-1", "state": "queued"})
	}))
	defer upstream.Close()
	hist := NewHistory(clockwork.NewRealClock())
	d, err := NewResponseDropper(upstream.URL, hist, map[string]string{"key-a": "tenant-a"}, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	// A fresh connection per call, so that the client cannot replay the
	// request on a reused one by itself.
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	defer hc.CloseIdleConnections()
	c := client.New(d.URL(), "key-a", client.WithHTTPClient(hc))
	params := &client.SubmitParams{IdempotencyKey: "k1", Workflow: "w", Input: json.RawMessage(`{}`)}

	d.SetRate(1)
	if _, err := c.Submit(context.Background(), params); err == nil {
		t.Fatal("the dropped submit returned no error")
	}
	if committed.Load() != 1 || d.Dropped() != 1 {
		t.Fatalf("committed %d, dropped %d; want 1, 1", committed.Load(), d.Dropped())
	}
	ops := hist.Ops()
	if len(ops) != 1 || ops[0].Fault != FaultDropResponse || ops[0].Key != "k1" || ops[0].TaskID != "task-1" || ops[0].Tenant != "tenant-a" {
		t.Fatalf("history %+v, want one drop naming key k1, task-1, tenant-a", ops)
	}

	d.SetRate(0)
	res, err := c.Submit(context.Background(), params)
	if err != nil || res.Task.ID != "task-1" {
		t.Fatalf("with no drops: %+v, %v", res, err)
	}
}
