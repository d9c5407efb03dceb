//go:build unix

package faultcheck

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/docket-dev/docket/internal/auth"
)

// Node is one `docket serve` child process, started, killed, frozen and
// restarted on the same address and database. A remote worker process
// (`docket faultcheck-worker`) is run the same way: sub and ready say
// which command and which first line of its stdout mean it is up.
type Node struct {
	Name string
	Addr string // host:port it listens on; "" for a worker
	bin  string
	sub  string   // the subcommand; default serve
	args []string // its flags (serve's with --listen)
	// ready starts the line the process prints once it is up; default
	// "Docket listening".
	ready string
	log   io.Writer
	// clock times the waits for the process to listen and to stop.
	clock clockwork.Clock

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
	paused  bool
	starts  int
	kills   int
	pauses  int
	lastErr error
}

// startTimeout bounds how long a node may take to listen.
const startTimeout = 60 * time.Second

// Start runs the node and returns once it listens. It is an error to start
// a node that runs.
func (n *Node) Start(ctx context.Context) error {
	n.mu.Lock()
	if n.cmd != nil {
		n.mu.Unlock()
		return fmt.Errorf("node %s is running", n.Name)
	}
	sub, readyLine := n.sub, n.ready
	if sub == "" {
		sub = "serve"
	}
	if readyLine == "" {
		readyLine = "Docket listening"
	}
	cmd := exec.Command(n.bin, append([]string{sub}, n.args...)...)
	cmd.SysProcAttr = childProcAttr()
	cmd.Stderr = n.log
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		n.mu.Unlock()
		return err
	}
	if err := cmd.Start(); err != nil {
		n.mu.Unlock()
		return fmt.Errorf("start node %s: %w", n.Name, err)
	}
	exited := make(chan struct{})
	ready := make(chan struct{})
	n.cmd, n.exited, n.paused = cmd, exited, false
	n.starts++
	n.mu.Unlock()

	go func() {
		sc := bufio.NewScanner(stdout)
		listening := false
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintf(n.log, "%s%s\n", stdoutPrefix(n.Name), redactKey(line))
			if !listening && strings.HasPrefix(line, readyLine) {
				listening = true
				close(ready)
			}
		}
		err := cmd.Wait()
		n.mu.Lock()
		n.lastErr = err
		n.mu.Unlock()
		close(exited)
	}()
	t := n.clock.NewTimer(startTimeout)
	defer t.Stop()
	select {
	case <-ready:
		return nil
	case <-exited:
		n.reap(cmd)
		return fmt.Errorf("node %s exited before it listened (see its log)", n.Name)
	case <-t.Chan():
	case <-ctx.Done():
	}
	_ = cmd.Process.Kill()
	<-exited
	n.reap(cmd)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("node %s did not listen within %s", n.Name, startTimeout)
}

// reap forgets cmd once it has exited.
func (n *Node) reap(cmd *exec.Cmd) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == cmd {
		n.cmd, n.paused = nil, false
	}
}

// running returns the process and its exit channel, or nil.
func (n *Node) running() (*exec.Cmd, chan struct{}) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cmd, n.exited
}

// Running reports whether the node's process is up (possibly frozen).
func (n *Node) Running() bool {
	cmd, _ := n.running()
	return cmd != nil
}

// Kill sends SIGKILL and waits for the process to go.
func (n *Node) Kill() error {
	cmd, exited := n.running()
	if cmd == nil {
		return nil
	}
	n.mu.Lock()
	n.kills++
	n.mu.Unlock()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	<-exited
	n.reap(cmd)
	return nil
}

// Pause freezes the process (SIGSTOP).
func (n *Node) Pause() error {
	cmd, _ := n.running()
	if cmd == nil {
		return fmt.Errorf("node %s is not running", n.Name)
	}
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		return err
	}
	n.mu.Lock()
	n.paused = true
	n.pauses++
	n.mu.Unlock()
	return nil
}

// Resume thaws a frozen process (SIGCONT).
func (n *Node) Resume() error {
	cmd, _ := n.running()
	if cmd == nil {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.paused {
		return nil
	}
	n.paused = false
	return cmd.Process.Signal(syscall.SIGCONT)
}

// Stop resumes a frozen node, asks it to shut down (SIGTERM) and waits,
// killing it if it takes longer than grace.
func (n *Node) Stop(grace time.Duration) error {
	_ = n.Resume()
	n.Terminate(grace)
	return nil
}

// Terminate asks the node to shut down (SIGTERM) and waits up to bound for
// the process to exit, killing it if it is still running then. It reports
// whether the process exited by itself, with status 0, in time; a node that
// is not running has nothing to report and is clean.
func (n *Node) Terminate(bound time.Duration) (clean bool) {
	cmd, exited := n.running()
	if cmd == nil {
		return true
	}
	_ = cmd.Process.Signal(syscall.SIGTERM) // if it fails, the bound's kill ends the process
	t := n.clock.NewTimer(bound)
	defer t.Stop()
	killed := false
	select {
	case <-exited:
	case <-t.Chan():
		killed = true
		_ = cmd.Process.Kill()
		<-exited
	}
	n.reap(cmd)
	n.mu.Lock()
	defer n.mu.Unlock()
	return !killed && n.lastErr == nil
}

// PID is the process ID of the running node, or 0.
func (n *Node) PID() int {
	cmd, _ := n.running()
	if cmd == nil {
		return 0
	}
	return cmd.Process.Pid
}

// Counts returns how often the node was started, killed and paused.
func (n *Node) Counts() (starts, kills, pauses int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.starts, n.kills, n.pauses
}

// stdoutPrefix marks, in a node's log file, the lines it printed on stdout.
func stdoutPrefix(node string) string { return "[" + node + " stdout] " }

// redactKey masks an API key a server prints on its first start.
func redactKey(line string) string {
	if i := strings.Index(line, auth.KeyPrefix); i >= 0 {
		return line[:i] + auth.KeyPrefix + "…"
	}
	return line
}
