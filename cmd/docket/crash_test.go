package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/docket-dev/docket/client"
	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/logtest"
)

// buildDocket compiles the docket binary once per test run.
func buildDocket(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "docket")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

type serverProc struct {
	cmd    *exec.Cmd
	key    string
	stderr *logtest.Buffer
}

var keyRE = regexp.MustCompile(`dk_[a-z0-9]+`)

// startServer runs `docket serve` and waits until it listens. On the first
// start it reads the demo key from stdout. extra flags follow the test's
// defaults (a later flag wins).
func startServer(t *testing.T, bin, db, addr string, wantKey bool, extra ...string) *serverProc {
	t.Helper()
	args := append([]string{"serve", "--db", db, "--listen", addr,
		"--lease-ttl", "1500ms", "--heartbeat-interval", "300ms", "--recovery-interval", "200ms",
		"--deadline-interval", "200ms", "--online-workers", "8"}, extra...)
	cmd := exec.Command(bin, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &serverProc{cmd: cmd, stderr: &logtest.Buffer{}}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			if k := keyRE.FindString(line); k != "" && p.key == "" {
				p.key = k
			}
			if regexp.MustCompile(`^Docket listening`).MatchString(line) {
				close(ready)
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("server did not start; stderr:\n%s", p.stderr.String())
	}
	if wantKey && p.key == "" {
		t.Fatal("first start printed no API key")
	}
	return p
}

// TestKill9LosesNothing submits tasks while the server is killed with
// SIGKILL, restarts it on the same database and checks that every
// acknowledged task (and every retried submission) ends in exactly one
// terminal state, once per idempotency key.
func TestKill9LosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the server binary")
	}
	bin := buildDocket(t)
	db := filepath.Join(t.TempDir(), "docket.db")
	addr := freeAddr(t)
	srv := startServer(t, bin, db, addr, true)
	key := srv.key
	c := client.New("http://"+addr, key)

	const n = 60
	var (
		mu        sync.Mutex
		acked     = map[string]string{} // idempotency key → task ID
		third     = make(chan struct{}) // closed once n/3 submissions are acknowledged
		thirdOnce sync.Once
	)
	input := func(i int) json.RawMessage {
		if i%2 == 0 {
			return json.RawMessage(fmt.Sprintf(`{"ms": %d}`, 200+i*10))
		}
		return json.RawMessage(fmt.Sprintf(`{"i": %d, "note": %q}`, i, logtest.Canary))
	}
	workflowOf := func(i int) string {
		if i%2 == 0 {
			return "demo.sleep"
		}
		return "demo.echo"
	}
	submit := func(ctx context.Context, i int) error {
		res, err := c.Submit(ctx, &client.SubmitParams{IdempotencyKey: fmt.Sprint("crash-", i), Workflow: workflowOf(i), Input: input(i)})
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		if prev, ok := acked[fmt.Sprint("crash-", i)]; ok && prev != res.Task.ID {
			return fmt.Errorf("key crash-%d answered two task IDs: %s and %s", i, prev, res.Task.ID)
		}
		acked[fmt.Sprint("crash-", i)] = res.Task.ID
		if len(acked) >= n/3 {
			thirdOnce.Do(func() { close(third) })
		}
		return nil
	}

	// Submit from 4 clients; kill -9 the server part-way through.
	var wg sync.WaitGroup
	failed := make(chan int, n)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 4 {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				if err := submit(ctx, i); err != nil {
					failed <- i
				}
				cancel()
			}
		}()
	}
	submitted := make(chan struct{})
	go func() {
		wg.Wait()
		close(submitted)
	}()
	select { // a third acknowledged (or, should most fail, every client done)
	case <-third:
	case <-submitted:
	}
	if err := srv.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = srv.cmd.Wait()
	wg.Wait()
	close(failed)
	logtest.Check(t, srv.stderr.String())
	mu.Lock()
	t.Logf("killed with %d of %d submissions acknowledged; %d failed in flight", len(acked), n, len(failed))
	mu.Unlock()

	srv2 := startServer(t, bin, db, addr, false)
	defer func() {
		_ = srv2.cmd.Process.Signal(syscall.SIGTERM)
		_ = srv2.cmd.Wait()
		logtest.Check(t, srv2.stderr.String())
	}()
	if srv2.key != "" {
		t.Fatal("the restarted server printed a new demo key")
	}
	// Clients retry what failed during the crash, with the same keys.
	for i := range failed {
		if err := submit(context.Background(), i); err != nil {
			t.Fatalf("retry of submission %d after restart: %v", i, err)
		}
	}
	if len(acked) != n {
		t.Fatalf("%d keys acknowledged, want %d", len(acked), n)
	}
	for k, id := range acked {
		task, err := c.Wait(context.Background(), id, 60*time.Second)
		if err != nil {
			t.Fatalf("%s (%s): %v", k, id, err)
		}
		if task.State != dockettype.StateSucceeded {
			t.Errorf("%s (%s) ended %s %+v, want succeeded", k, id, task.State, task.Error)
		}
		events, err := c.Events(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		terminal := 0
		for _, e := range events {
			if e.To.Terminal() {
				terminal++
			}
		}
		if terminal != 1 {
			t.Errorf("%s: %d terminal events in %+v", k, terminal, events)
		}
	}
	// Exactly one task per key: the tenant has n tasks.
	page, err := c.List(context.Background(), &client.ListParams{Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Tasks) != n {
		t.Fatalf("the tenant has %d tasks, want %d (one per key)", len(page.Tasks), n)
	}
}
