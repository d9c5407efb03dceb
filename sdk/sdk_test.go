// Package sdk_test runs the Python and TypeScript SDKs' own test suites
// against a real `docket serve` built from this tree, so that the README's
// one test command covers every SDK. Each suite's integration tests read
// DOCKET_URL, DOCKET_ADMIN_KEY and DOCKET_LEASE_TTL_MS; their unit tests
// run against fakes of their own.
//
// A missing interpreter skips its suite, saying so; with
// DOCKET_REQUIRE_SDKS=1 (as .ci/run sets) it fails instead.
package sdk_test

import (
	"bufio"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// leaseTTL is the server's lease TTL: short, so that the suites' kill -9
// tests see recovery in seconds.
const leaseTTL = 2 * time.Second

// server is a `docket serve` process on a scratch SQLite file.
type server struct {
	url, key string
	cmd      *exec.Cmd
	stderr   *lockedWriter
}

var keyRE = regexp.MustCompile(`dk_[a-z0-9]+`)

func startServer(t *testing.T) *server {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "docket")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/docket").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, "serve", "--db", filepath.Join(dir, "docket.db"), "--listen", addr,
		"--lease-ttl", leaseTTL.String(), "--recovery-interval", "200ms", "--deadline-interval", "200ms",
		"--default-tenant-limit", "-1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s := &server{url: "http://" + addr, cmd: cmd, stderr: &lockedWriter{w: &strings.Builder{}}}
	cmd.Stderr = s.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if k := keyRE.FindString(sc.Text()); k != "" && s.key == "" {
				s.key = k
			}
			if strings.HasPrefix(sc.Text(), "Docket listening") {
				close(ready)
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(60 * time.Second):
		t.Fatalf("the server did not start; stderr:\n%s", s.stderr.String())
	}
	return s
}

type lockedWriter struct {
	mu sync.Mutex
	w  *strings.Builder
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// String is what was written so far (the server may still be writing).
func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.String()
}

// need finds an interpreter, or skips (fails under DOCKET_REQUIRE_SDKS).
func need(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("DOCKET_REQUIRE_SDKS") != "" {
			t.Fatalf("%s is not on the PATH and DOCKET_REQUIRE_SDKS is set", name)
		}
		t.Skipf("%s is not on the PATH: the SDK's tests are skipped", name)
	}
	return path
}

// runSuite runs one SDK's test command from the repository root against
// the server, and fails with its output when it fails.
func runSuite(t *testing.T, s *server, name string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "DOCKET_URL="+s.url, "DOCKET_ADMIN_KEY="+s.key,
		"DOCKET_LEASE_TTL_MS="+strconv.FormatInt(leaseTTL.Milliseconds(), 10))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s\nserver stderr (last 4 KiB):\n%s", name, strings.Join(args, " "), err, out, tail(s.stderr.String(), 4096))
	}
	t.Logf("%s", tail(string(out), 2048))
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

func TestPythonSDK(t *testing.T) {
	t.Parallel()
	py := need(t, "python3")
	s := startServer(t)
	runSuite(t, s, py, "-m", "unittest", "discover", "-s", "sdk/python/tests", "-t", "sdk/python", "-p", "test_*.py")
}

func TestTypeScriptSDK(t *testing.T) {
	t.Parallel()
	node := need(t, "node")
	if _, err := os.Stat("typescript/dist"); err != nil {
		t.Fatalf("sdk/typescript/dist is missing: the compiled SDK is committed with its sources")
	}
	s := startServer(t)
	runSuite(t, s, node, "--test", "sdk/typescript/test/")
}
