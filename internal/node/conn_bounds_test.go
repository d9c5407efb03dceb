package node

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/docket-dev/docket/internal/logtest"
)

// The node serves on a limiter that has the server's connection states:
// with its cap held by idle kept-alive connections (their idle timeout is
// a minute), a new client is answered at once.
func TestNodeIdleConnectionsGiveWayToNewOnes(t *testing.T) {
	t.Parallel()
	logger, _ := logtest.New(t)
	n, err := New(context.Background(), Config{
		DB: filepath.Join(t.TempDir(), "docket.db"), Listen: "127.0.0.1:0", Logger: logger,
		MaxConnections: 4, OnlineWorkers: -1, OfflineWorkers: -1,
	}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(context.Background()); err != nil {
		n.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := n.Stop(); err != nil {
			t.Error(err)
		}
	})
	for range 4 {
		c, err := net.Dial("tcp", n.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, n.URL()+"/healthz", nil)
	res, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatalf("a new client with the cap held by idle connections: %v", err)
	}
	res.Body.Close()
}
