// Command attack runs the resource attacks of issue 24 against a built
// `docket serve` binary it starts itself (fresh SQLite database in a
// temporary folder, demo mode), and reports what the server did.
//
//	go build -o docket ./cmd/docket
//	go run ./scripts/attack -docket ./docket batch-memory [-n 80] [-rounds 3] [-- serve flags]
//	go run ./scripts/attack -docket ./docket idle-conns [-idle 4200] [-silent 0] [-- serve flags]
//	go run ./scripts/attack -docket ./docket get-storm [-n 2500] [-- serve flags]
//
// batch-memory sends n concurrent POST /v1/tasks/batch of 16 MiB each
// (items of an unknown workflow, so nothing is written), rounds times, and
// prints the server's peak RSS (VmHWM of /proc/<pid>/status), its RSS
// after the burst, and the answers by status.
//
// idle-conns opens idle keep-alive sockets (each sends one GET /healthz,
// then nothing; one closed by the server is opened again at once) and
// silent sockets (connected, no byte sent; reopened likewise), then times
// GET /healthz from a fresh client on a new connection, ten times.
//
// get-storm makes a task with a 1 MiB result (demo.echo), then sends n
// concurrent GETs of it and prints the answers by status and code, and
// the peak RSS.
//
// Linux only (/proc). It is a measuring tool, not a test.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	docket := flag.String("docket", "./docket", "the docket binary")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: attack -docket BIN batch-memory|idle-conns [flags] [-- serve flags]")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() < 1 {
		flag.Usage()
		os.Exit(2)
	}
	var err error
	switch cmd, args := flag.Arg(0), flag.Args()[1:]; cmd {
	case "batch-memory":
		err = batchMemory(*docket, args)
	case "idle-conns":
		err = idleConns(*docket, args)
	case "get-storm":
		err = getStorm(*docket, args)
	default:
		err = fmt.Errorf("unknown attack %q", cmd)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "attack:", err)
		os.Exit(1)
	}
}

// splitServeFlags splits args at "--": the attack's flags, then serve's.
func splitServeFlags(args []string) ([]string, []string) {
	if i := slices.Index(args, "--"); i >= 0 {
		return args[:i], args[i+1:]
	}
	return args, nil
}

type server struct {
	cmd  *exec.Cmd
	dir  string
	url  string
	key  string
	logs *bytes.Buffer
}

var (
	listening = regexp.MustCompile(`Docket listening on (http://\S+)`)
	apiKey    = regexp.MustCompile(`export DOCKET_API_KEY=(\S+)`)
)

// start runs docket serve on a fresh database and waits for its URL and
// the demo key.
func start(docket string, extra []string) (*server, error) {
	dir, err := os.MkdirTemp("", "docket-attack")
	if err != nil {
		return nil, err
	}
	args := append([]string{"serve", "--db", filepath.Join(dir, "docket.db"), "--listen", "127.0.0.1:0"}, extra...)
	s := &server{cmd: exec.Command(docket, args...), dir: dir, logs: new(bytes.Buffer)}
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	s.cmd.Stderr = s.cmd.Stdout
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	found := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		var once sync.Once
		for sc.Scan() {
			line := sc.Text()
			if os.Getenv("ATTACK_SERVER_LOG") != "" && (strings.Contains(line, `"level":"WARN"`) || strings.Contains(line, `"level":"ERROR"`) || strings.HasPrefix(line, "DEBUG")) {
				fmt.Fprintln(os.Stderr, "server:", line)
			}
			if m := listening.FindStringSubmatch(line); m != nil {
				s.url = m[1]
			}
			if m := apiKey.FindStringSubmatch(line); m != nil && s.key == "" {
				s.key = m[1]
			}
			if s.url != "" && s.key != "" {
				once.Do(func() { close(found) })
			}
		}
	}()
	select {
	case <-found:
	case <-time.After(60 * time.Second):
		s.stop()
		return nil, fmt.Errorf("the server printed no URL and key within 60 s")
	}
	return s, nil
}

func (s *server) stop() {
	_ = s.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
	os.RemoveAll(s.dir)
}

// status reads a field of /proc/<pid>/status in MiB.
func (s *server) status(field string) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.ParseFloat(strings.Fields(rest)[0], 64)
			return kb / 1024
		}
	}
	return -1
}

// batchBody is a 16 MiB batch (just under) of 1,000 items of an unknown
// workflow.
func batchBody(round, req int) []byte {
	const total, items = 16 << 20, 1000
	pad := strings.Repeat("x", total/items-120)
	var b bytes.Buffer
	b.WriteString(`{"tasks":[`)
	for i := range items {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"idempotency_key":"r%d-q%d-i%d","workflow":"attack.unknown","input":{"s":"%s"}}`, round, req, i, pad)
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

func batchMemory(docket string, args []string) error {
	args, serveArgs := splitServeFlags(args)
	fs := flag.NewFlagSet("batch-memory", flag.ExitOnError)
	n := fs.Int("n", 80, "concurrent batches")
	rounds := fs.Int("rounds", 3, "bursts, one after the other")
	settle := fs.Duration("settle", 10*time.Second, "wait after the bursts before reading RSS again")
	_ = fs.Parse(args)
	s, err := start(docket, serveArgs)
	if err != nil {
		return err
	}
	defer s.stop()
	fmt.Printf("server pid %d, %s; idle RSS %.0f MiB\n", s.cmd.Process.Pid, s.url, s.status("VmRSS"))
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: *n}, Timeout: 5 * time.Minute}
	statuses := map[string]int{}
	var mu sync.Mutex
	for round := range *rounds {
		bodies := make([][]byte, *n)
		for i := range bodies {
			bodies[i] = batchBody(round, i)
		}
		began := time.Now()
		var wg sync.WaitGroup
		for i := range *n {
			wg.Go(func() {
				req, _ := http.NewRequest(http.MethodPost, s.url+"/v1/tasks/batch", bytes.NewReader(bodies[i]))
				req.Header.Set("Authorization", "Bearer "+s.key)
				req.Header.Set("Content-Type", "application/json")
				code := answer(client, req)
				mu.Lock()
				statuses[code]++
				mu.Unlock()
			})
		}
		wg.Wait()
		fmt.Printf("round %d: %d batches in %s; RSS %.0f MiB, peak %.0f MiB\n", round+1, *n,
			time.Since(began).Round(time.Millisecond), s.status("VmRSS"), s.status("VmHWM"))
	}
	time.Sleep(*settle)
	fmt.Printf("answers by status and code: %v\n", statuses)
	fmt.Printf("peak RSS (VmHWM) %.0f MiB; RSS %s after the bursts %.0f MiB\n", s.status("VmHWM"), *settle, s.status("VmRSS"))
	return nil
}

func idleConns(docket string, args []string) error {
	args, serveArgs := splitServeFlags(args)
	fs := flag.NewFlagSet("idle-conns", flag.ExitOnError)
	idle := fs.Int("idle", 4200, "idle keep-alive sockets held open")
	silent := fs.Int("silent", 0, "silent sockets (no byte sent) held open")
	partial := fs.Int("partial", 0, "sockets that send part of a request header, then nothing")
	warm := fs.Duration("warm", 5*time.Second, "how long the sockets are opened before the first timed request")
	_ = fs.Parse(args)
	s, err := start(docket, serveArgs)
	if err != nil {
		return err
	}
	defer s.stop()
	host := strings.TrimPrefix(s.url, "http://")
	ctx, cancel := context.WithCancel(context.Background())
	var reopened, held atomic.Int64
	var wg sync.WaitGroup
	// hold keeps one socket open, reopening it when the server closes it.
	hold := func(send string, readAnswer bool) {
		defer wg.Done()
		buf := make([]byte, 4096)
		for ctx.Err() == nil {
			c, err := net.DialTimeout("tcp", host, 5*time.Second)
			if err != nil {
				time.Sleep(50 * time.Millisecond)
				continue
			}
			stop := context.AfterFunc(ctx, func() { c.Close() })
			if send != "" {
				_, _ = io.WriteString(c, send)
			}
			if readAnswer {
				_, _ = c.Read(buf) // the answer (small), then nothing more
			}
			held.Add(1)
			_, _ = io.Copy(io.Discard, c) // until the server closes it
			held.Add(-1)
			stop()
			c.Close()
			reopened.Add(1)
		}
	}
	for range *idle {
		wg.Add(1)
		go hold("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", true)
	}
	for range *silent {
		wg.Add(1)
		go hold("", false)
	}
	for range *partial {
		wg.Add(1)
		go hold("GET /healthz HTTP/1.1\r\nHost:", false)
	}
	time.Sleep(*warm)
	fmt.Printf("sockets: %d idle, %d silent, %d partial; %d held open after %s\n", *idle, *silent, *partial, held.Load(), *warm)
	var took []time.Duration
	for range 10 {
		client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 120 * time.Second}
		began := time.Now()
		res, err := client.Get(s.url + "/healthz")
		d := time.Since(began)
		if err != nil {
			fmt.Printf("  GET /healthz: %v after %s\n", err, d.Round(time.Millisecond))
		} else {
			res.Body.Close()
			fmt.Printf("  GET /healthz: %d in %s\n", res.StatusCode, d.Round(time.Millisecond))
		}
		took = append(took, d)
		time.Sleep(500 * time.Millisecond)
	}
	slices.Sort(took)
	fmt.Printf("new client's GET /healthz: median %s, max %s; sockets reopened by the attacker: %d\n",
		took[len(took)/2].Round(time.Millisecond), took[len(took)-1].Round(time.Millisecond), reopened.Load())
	cancel()
	wg.Wait()
	return nil
}

// answer sends req and returns "status" or "status code" (the error's
// code), or "none: <error>".
func answer(client *http.Client, req *http.Request) string {
	res, err := client.Do(req)
	if err != nil {
		return "none"
	}
	defer res.Body.Close()
	var body struct {
		Error struct{ Code string } `json:"error"`
	}
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode >= 400 && json.Unmarshal(b, &body) == nil && body.Error.Code != "" {
		return fmt.Sprintf("%d %s", res.StatusCode, body.Error.Code)
	}
	return strconv.Itoa(res.StatusCode)
}

func getStorm(docket string, args []string) error {
	args, serveArgs := splitServeFlags(args)
	fs := flag.NewFlagSet("get-storm", flag.ExitOnError)
	n := fs.Int("n", 2500, "concurrent GETs")
	_ = fs.Parse(args)
	s, err := start(docket, serveArgs)
	if err != nil {
		return err
	}
	defer s.stop()
	// demo.echo's result is its input: about 1 MiB, under the result bound.
	input := fmt.Sprintf(`{"workflow":"demo.echo","input":{"s":"%s"}}`, strings.Repeat("x", 1<<20-200))
	req, _ := http.NewRequest(http.MethodPost, s.url+"/v1/tasks", strings.NewReader(input))
	req.Header.Set("Authorization", "Bearer "+s.key)
	req.Header.Set("Idempotency-Key", "storm")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	var task struct{ ID, State string }
	err = json.NewDecoder(res.Body).Decode(&task)
	res.Body.Close()
	if err != nil || task.ID == "" {
		return fmt.Errorf("submit: %d %v", res.StatusCode, err)
	}
	for deadline := time.Now().Add(30 * time.Second); task.State != "succeeded"; {
		if time.Now().After(deadline) {
			return fmt.Errorf("the task is %s after 30 s", task.State)
		}
		time.Sleep(100 * time.Millisecond)
		req, _ := http.NewRequest(http.MethodGet, s.url+"/v1/tasks/"+task.ID, nil)
		req.Header.Set("Authorization", "Bearer "+s.key)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		_ = json.NewDecoder(res.Body).Decode(&task)
		res.Body.Close()
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: *n, MaxConnsPerHost: *n}, Timeout: 5 * time.Minute}
	statuses := map[string]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	began := time.Now()
	for range *n {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodGet, s.url+"/v1/tasks/"+task.ID, nil)
			req.Header.Set("Authorization", "Bearer "+s.key)
			code := answer(client, req)
			mu.Lock()
			statuses[code]++
			mu.Unlock()
		})
	}
	wg.Wait()
	fmt.Printf("%d concurrent GETs of a task with a 1 MiB result in %s: %v; peak RSS (VmHWM) %.0f MiB\n",
		*n, time.Since(began).Round(time.Millisecond), statuses, s.status("VmHWM"))
	return nil
}
