package worker_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docket-dev/docket"
	"github.com/docket-dev/docket/dockettype"
)

// The README's Go worker is examples/go-worker/main.go, and it works: built
// and run against a real server, it finishes a task and exits 0 on SIGTERM.
func TestReadmeGoWorker(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the example")
	}
	t.Parallel()
	src, err := os.ReadFile("../examples/go-worker/main.go")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const marker = "<!-- example: examples/go-worker/main.go -->\n```go\n"
	i := strings.Index(string(readme), marker)
	if i < 0 {
		t.Fatalf("README.md has no block after %q", marker)
	}
	block := string(readme)[i+len(marker):]
	block = block[:strings.Index(block, "```")]
	if block != string(src) {
		t.Fatalf("the README's Go worker differs from examples/go-worker/main.go:\n%s", block)
	}

	e := newEnv(t, docket.Config{})
	e.register("go.hello", 0)
	bin := filepath.Join(t.TempDir(), "go-worker")
	if out, err := exec.Command("go", "build", "-o", bin, "../examples/go-worker").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "DOCKET_URL="+e.srv.URL(), "DOCKET_WORKER_KEY="+e.worker)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	logs := make(chan string, 1)
	go func() {
		var b strings.Builder
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			b.WriteString(sc.Text() + "\n")
		}
		logs <- b.String()
	}()
	task := e.submit(e.admin, "hello-ada", "go.hello", `{"name":"Ada"}`, 0)
	got := e.wait(task.ID)
	bad := e.wait(e.submit(e.admin, "hello-nobody", "go.hello", `{}`, 0).ID)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("the example exited with %v after SIGTERM; stderr:\n%s", err, <-logs)
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("the example did not exit within 30 s of SIGTERM")
	}
	if got.State != dockettype.StateSucceeded || string(got.Result) != `{"greeting":"hello, Ada"}` {
		t.Errorf("the example's task: %s %s", got.State, got.Result)
	}
	if bad.State != dockettype.StateFailed || bad.Error == nil || bad.Error.Code != "invalid_input" {
		t.Errorf("the example's bad input: %s %+v, want failed invalid_input", bad.State, bad.Error)
	}
}
