package dashboard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/docket-dev/docket"
	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/logtest"
)

var updateScreenshot = flag.Bool("update-screenshot", false, "write the README's screenshots, docs/dashboard*.png")

// browserPath finds Chromium: $DOCKET_CHROMIUM, or Debian's chromium (or
// another Chrome) on the PATH.
func browserPath() string {
	if p := os.Getenv("DOCKET_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// browser drives one headless Chromium tab for a test.
type browser struct {
	t     *testing.T
	ctx   context.Context
	shots string // folder of the screenshots
	n     int    // screenshots taken

	mu      sync.Mutex
	console []string // what the console reported as going wrong
}

// listen records, from the tab's events, what a person would see in red in
// the console: uncaught exceptions and refused promises, console.error and
// console.warn calls, and errors the browser logs (a module that does not
// load, a CSP violation). An API call answered 4xx is logged too, by the
// network: that is an answer the page handles, not a fault of the page.
func (b *browser) listen(ev any) {
	var problem string
	switch e := ev.(type) {
	case *runtime.EventExceptionThrown:
		d := e.ExceptionDetails
		problem = "exception: " + d.Text
		if d.Exception != nil {
			problem += " " + d.Exception.Description
		}
		problem += fmt.Sprintf(" (%s:%d)", d.URL, d.LineNumber+1)
	case *runtime.EventConsoleAPICalled:
		if e.Type != runtime.ConsoleAPICalledTypeError && e.Type != runtime.ConsoleAPICalledTypeWarning &&
			e.Type != runtime.ConsoleAPICalledTypeAssert {
			return
		}
		problem = "console." + string(e.Type) + ":"
		for _, a := range e.Args {
			problem += " " + a.Description + string(a.Value)
		}
	case *cdplog.EventEntryAdded:
		if e.Entry.Level != cdplog.EntryLevelError || e.Entry.Source == cdplog.EntrySourceNetwork ||
			strings.HasPrefix(e.Entry.Text, "Failed to load resource: the server responded with a status of 4") {
			return
		}
		problem = "log (" + string(e.Entry.Source) + "): " + e.Entry.Text + " " + e.Entry.URL
	default:
		return
	}
	b.mu.Lock()
	b.console = append(b.console, problem)
	b.mu.Unlock()
}

// consoleProblems returns what the console reported so far.
func (b *browser) consoleProblems() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.console)
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	path := browserPath()
	if path == "" && os.Getenv("DOCKET_REQUIRE_BROWSER") != "" {
		t.Fatal("no Chromium found, and DOCKET_REQUIRE_BROWSER is set (as .ci/run sets it): install Debian's chromium")
	}
	if path == "" {
		t.Skip("no Chromium found: the browser tests need Debian's chromium (apt-get install -y chromium; .ci/run installs it) or DOCKET_CHROMIUM")
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	// Start the browser on the tab's own context: a browser started by a
	// call with a shorter-lived context would end with that context.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start %s: %v", path, err)
	}
	shots, err := os.MkdirTemp("", "docket-ui-screenshots-")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots of this run: %s", shots)
	b := &browser{t: t, ctx: ctx, shots: shots}
	if err := chromedp.Listen(ctx, b.listen); err != nil {
		t.Fatal(err)
	}
	// Every browser test fails on what the console reports, from the
	// first page load on (a module that does not load included).
	t.Cleanup(func() {
		switch p := b.consoleProblems(); {
		case len(p) == 0:
		case t.Failed():
			t.Logf("the browser's console reported: %q", p)
		default:
			t.Errorf("the browser's console reported problems: %q", p)
		}
	})
	return b
}

// do runs actions, bounded in time; on an error it saves a screenshot of
// the page and fails the test.
func (b *browser) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 45*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.screenshot("failed-" + fileNameRE.ReplaceAllString(what, "-"))
		b.t.Fatalf("%s: %v", what, err)
	}
}

// fileNameRE matches what a screenshot's file name does not keep.
var fileNameRE = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// submitForm presses a form's submit button (form.submit() would skip the
// page's submit handler, as no person can).
func submitForm(id string) chromedp.Action[chromedp.Void] {
	return chromedp.Click(chromedp.CSS("#" + id + ` button[type="submit"]`))
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](b *browser, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 15*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// until waits, on every change of the page, for a JavaScript predicate.
func (b *browser) until(what, predicate string) {
	b.t.Helper()
	b.do(what, chromedp.Poll[chromedp.Void](predicate, chromedp.WithPollingMutation(), chromedp.WithPollingTimeout(40*time.Second)))
}

// set sets the value of a form field, as a person typing or choosing would.
func (b *browser) set(id, value string) {
	b.t.Helper()
	eval[chromedp.Void](b, fmt.Sprintf(`document.getElementById(%q).value = %q`, id, value))
}

// choose sets a select's value and tells the page, as a person choosing
// an option would (set alone fires no change event).
func (b *browser) choose(id, value string) {
	b.t.Helper()
	eval[chromedp.Void](b, fmt.Sprintf(`(() => { const s = document.getElementById(%q); s.value = %q; s.dispatchEvent(new Event("change", { bubbles: true })); })()`, id, value))
}

// goTo moves the page to a view of the dashboard (a fragment: no reload).
func (b *browser) goTo(fragment string) {
	b.t.Helper()
	eval[chromedp.Void](b, fmt.Sprintf(`location.hash = %q`, fragment))
}

func (b *browser) text(sel string) string {
	b.t.Helper()
	return eval[string](b, fmt.Sprintf(`document.querySelector(%q).textContent`, sel))
}

func (b *browser) visible(sel string) bool {
	b.t.Helper()
	return eval[bool](b, fmt.Sprintf(`(() => { const n = document.querySelector(%q); return !!n && n.offsetParent !== null; })()`, sel))
}

// screenshot saves the whole page as NN-name.png and returns its path.
func (b *browser) screenshot(name string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 15*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return ""
	}
	b.n++
	path := filepath.Join(b.shots, fmt.Sprintf("%02d-%s.png", b.n, name))
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	return path
}

// keep copies a screenshot to the repository's docs folder when the test
// runs with -update-screenshot.
func (b *browser) keep(shot, name string) {
	b.t.Helper()
	if !*updateScreenshot || shot == "" {
		return
	}
	data, err := os.ReadFile(shot)
	if err != nil {
		b.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("..", "..", "docs", name), data, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// api is a plain HTTP client of the server under test.
type api struct {
	t      *testing.T
	url    string
	client *http.Client
}

// newAPI is a client of the server at url; its connections close with the
// test.
func newAPI(t *testing.T, url string) *api {
	transport := &http.Transport{}
	t.Cleanup(transport.CloseIdleConnections)
	return &api{t: t, url: url, client: &http.Client{Transport: transport, Timeout: time.Minute}}
}

func (a *api) call(method, path, key, idem string, body any, out any) int {
	a.t.Helper()
	status, data := a.raw(method, path, key, idem, body)
	if out != nil && status < 300 {
		if err := json.Unmarshal(data, out); err != nil {
			a.t.Fatalf("%s %s: %v: %s", method, path, err, data)
		}
	}
	return status
}

// refusal makes a call that the API should refuse and returns the answer's
// status and error code.
func (a *api) refusal(method, path, key, idem string, body any) (int, string) {
	a.t.Helper()
	status, data := a.raw(method, path, key, idem, body)
	var answer struct{ Error struct{ Code string } }
	if status >= 300 {
		if err := json.Unmarshal(data, &answer); err != nil {
			a.t.Fatalf("%s %s: %d: %v: %s", method, path, status, err, data)
		}
	}
	return status, answer.Error.Code
}

// raw makes a call and returns the answer's status and body.
func (a *api) raw(method, path, key, idem string, body any) (int, []byte) {
	a.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			a.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, a.url+path, rd)
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if idem != "" {
		req.Header.Set("Idempotency-Key", idem)
	}
	resp, err := a.client.Do(req)
	if err != nil {
		a.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		a.t.Fatal(err)
	}
	return resp.StatusCode, data
}

func (a *api) submit(key, idem string, body map[string]any) *dockettype.Task {
	a.t.Helper()
	var task dockettype.Task
	if st := a.call(http.MethodPost, "/v1/tasks", key, idem, body, &task); st != http.StatusCreated {
		a.t.Fatalf("submit %v: status %d", body, st)
	}
	return &task
}

func (a *api) wait(key, id string) *dockettype.Task {
	a.t.Helper()
	var task dockettype.Task
	if st := a.call(http.MethodGet, "/v1/tasks/"+id+"?wait=30s", key, "", nil, &task); st != http.StatusOK {
		a.t.Fatalf("wait for %s: status %d", id, st)
	}
	return &task
}

// startServer runs a real `docket serve` node (demo mode, SQLite) on a
// loopback port and returns its URL and the demo tenant's admin key.
func startServer(t *testing.T) (string, string) {
	t.Helper()
	url, key, _ := startNode(t, filepath.Join(t.TempDir(), "docket.db"))
	if key == "" {
		t.Fatal("bootstrap made no key")
	}
	return url, key
}

// startNode runs a real `docket serve` node (demo mode) on the SQLite
// database db, on a loopback port, and returns its URL, the admin key its
// bootstrap made (on the database's first start only, else "") and a stop
// that ends it, at the latest when the test ends.
func startNode(t *testing.T, db string) (string, string, func()) {
	t.Helper()
	logger, _ := logtest.New(t)
	ctx := context.Background()
	srv, err := docket.New(ctx, docket.Config{
		DB: db, Listen: "127.0.0.1:0", Mode: docket.ModeDemo,
		OnlineWorkers: 4, OfflineWorkers: 2, SQLiteSynchronous: "normal", ShutdownGrace: 100 * time.Millisecond,
		Logger: logger,
	})
	if err != nil {
		t.Fatal(err)
	}
	key, err := srv.Bootstrap(ctx)
	if err != nil {
		srv.Close()
		t.Fatalf("bootstrap: %v", err)
	}
	if err := srv.Start(ctx); err != nil {
		srv.Close()
		t.Fatal(err)
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			if err := srv.Stop(); err != nil {
				t.Errorf("stop: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return srv.URL(), key, stop
}

// An operator signs in, follows a task from submission to evidence, cancels
// a running task, manages tenants and keys; another tenant's member key
// sees none of it and gets no admin view. Everything happens in a real
// headless Chromium against a real server.
func TestDashboardInBrowser(t *testing.T) {
	b := newBrowser(t)
	url, adminKey := startServer(t)
	a := newAPI(t, url)

	// A member key of another tenant, made through the admin API.
	var globex struct{ ID, Key string }
	if st := a.call(http.MethodPost, "/v1/admin/keys", adminKey, "", map[string]string{"tenant": "globex", "principal": "gina"}, &globex); st != http.StatusCreated {
		t.Fatalf("create globex key: %d", st)
	}

	// A wrong key is refused on the sign-in page.
	b.do("open the dashboard", chromedp.Navigate(url+"/ui"), chromedp.WaitVisible(chromedp.ID("signin-key")))
	// Record what the page gets wrong from here on: script errors, refused
	// promises, anything the Content-Security-Policy blocks.
	eval[chromedp.Void](b, `window.problems = [];
		window.addEventListener("error", e => window.problems.push("error: " + e.message));
		window.addEventListener("unhandledrejection", e => window.problems.push("rejection: " + e.reason));
		document.addEventListener("securitypolicyviolation", e => window.problems.push("CSP: " + e.violatedDirective + " " + e.blockedURI))`)
	t.Cleanup(func() {
		if !t.Failed() {
			if p := eval[[]string](b, `window.problems`); len(p) > 0 {
				t.Errorf("the page had problems: %v", p)
			}
		}
	})
	b.do("sign in with a wrong key",
		chromedp.SendKeys(chromedp.ID("signin-key"), "dk_not_a_key"),
		submitForm("signin-form"),
		chromedp.WaitVisible(chromedp.ID("signin-error")))
	if got := b.text("#signin-error"); !strings.Contains(got, "refused") {
		t.Errorf("sign-in error = %q", got)
	}

	// Sign in as the operator: the overview opens; the key is in
	// sessionStorage only, never in the URL or a cookie.
	b.do("sign in",
		chromedp.SendKeys(chromedp.ID("signin-key"), adminKey),
		submitForm("signin-form"),
		chromedp.WaitVisible(chromedp.ID("view-overview")),
		chromedp.WaitVisible(chromedp.CSS(`#pool-cards .card[data-pool="online"]`)))
	if !b.visible("#nav-admin") || !b.visible("#nav-overview") {
		t.Error("an admin key does not see the admin views in the menu")
	}
	if got := eval[string](b, `sessionStorage.getItem("docket.apiKey")`); got != adminKey {
		t.Error("the key is not kept in sessionStorage")
	}
	if href := eval[string](b, `location.href`); strings.Contains(href, adminKey) {
		t.Errorf("the key is in the URL: %s", href)
	}
	if c := eval[string](b, `document.cookie`); c != "" {
		t.Errorf("the dashboard set cookies: %q", c)
	}

	// Submit through the API; the task appears in the list.
	q := a.submit(adminKey, "q-1", map[string]any{"workflow": "quality.evaluate", "input": map[string]string{"text": "Thanks for your order. It ships tomorrow."}})
	b.do("open the task list", chromedp.Click(chromedp.ID("nav-tasks")), chromedp.WaitVisible(chromedp.ID("view-tasks")))
	row := fmt.Sprintf(`#tasks-table tr[data-id=%q]`, q.ID)
	b.until("see the task in the list", fmt.Sprintf(`document.querySelector(%q) !== null`, row))

	// Submit one from the page too, and follow the link to it.
	b.do("open the new task form", chromedp.Click(chromedp.ID("new-task-toggle")), chromedp.WaitVisible(chromedp.ID("new-input")))
	if got := eval[string](b, `document.getElementById("new-input").value`); !strings.Contains(got, `"text"`) {
		t.Errorf("the form's example input for quality.evaluate = %q", got)
	}
	b.set("new-workflow", "demo.echo")
	b.set("new-input", `{"from": "the dashboard"}`)
	b.do("submit from the page", submitForm("new-task"), chromedp.WaitVisible(chromedp.CSS("#new-answer a")))
	if got := b.text("#new-answer"); !strings.HasPrefix(got, "Created ") {
		t.Errorf("submit answer = %q", got)
	}
	b.do("open the submitted task", chromedp.Click(chromedp.CSS("#new-answer a")), chromedp.WaitVisible(chromedp.ID("task-result")))
	if got := b.text("#task-result"); !strings.Contains(got, "the dashboard") {
		t.Errorf("the echo of the page's submission = %q", got)
	}
	b.do("back to the list", chromedp.Click(chromedp.ID("nav-tasks")), chromedp.WaitVisible(chromedp.CSS(row)))

	// Open it: fields, timeline and evidence.
	a.wait(adminKey, q.ID)
	b.do("open the task", chromedp.Click(chromedp.CSS(row+" a")), chromedp.WaitVisible(chromedp.ID("view-task")))
	b.until("see it succeed", `document.querySelector("#task-state").dataset.state === "succeeded"`)
	b.until("see its evidence", `document.querySelectorAll("#task-evidence tbody tr").length > 0`)
	var evidence struct{ Evidence []dockettype.Evidence }
	a.call(http.MethodGet, "/v1/tasks/"+q.ID+"/evidence", adminKey, "", nil, &evidence)
	if got := eval[int](b, `document.querySelectorAll("#task-evidence tbody tr").length`); got != len(evidence.Evidence) || got == 0 {
		t.Errorf("evidence rows = %d, want %d (the API's)", got, len(evidence.Evidence))
	}
	if txt := b.text("#task-evidence"); !strings.Contains(txt, "no-private-keys") || !strings.Contains(txt, "✓ yes") {
		t.Errorf("evidence table = %q, want the rule IDs and their verdicts", txt)
	}
	var events struct{ Events []dockettype.Event }
	a.call(http.MethodGet, "/v1/tasks/"+q.ID+"/events", adminKey, "", nil, &events)
	states := eval[[]string](b, `Array.from(document.querySelectorAll("#task-timeline li")).map(li => li.dataset.to)`)
	if len(states) != len(events.Events) || len(states) < 3 || states[len(states)-1] != "succeeded" {
		t.Errorf("timeline = %v, want the %d events ending in succeeded", states, len(events.Events))
	}
	if res := b.text("#task-result"); !strings.Contains(res, `"verdict"`) {
		t.Errorf("result = %q", res)
	}
	b.keep(b.screenshot("task-detail"), "dashboard-task.png")

	// Client data is shown as text, never run as HTML.
	x := a.submit(adminKey, "xss-1", map[string]any{"workflow": "demo.echo",
		"input": map[string]string{"note": `<img src=x id=pwned onerror="document.title='pwned'">`}})
	a.wait(adminKey, x.ID)
	b.goTo("#/tasks/" + x.ID)
	b.do("open the echo task", chromedp.WaitVisible(chromedp.ID("task-result")))
	if res := b.text("#task-result"); !strings.Contains(res, `<img src=x id=pwned`) {
		t.Errorf("result = %q, want the markup shown as text", res)
	}
	if eval[bool](b, `document.getElementById("pwned") !== null || document.title === "pwned"`) {
		t.Fatal("client data was rendered as HTML")
	}

	// Cancel a running task from its page and see the state change.
	nap := a.submit(adminKey, "nap-1", map[string]any{"workflow": "demo.sleep", "input": map[string]int{"ms": 600000}})
	b.goTo("#/tasks/" + nap.ID)
	b.do("open the sleeping task", chromedp.WaitVisible(chromedp.ID("task-cancel")))
	b.until("see it run", `document.querySelector("#task-state").dataset.state === "running"`)
	b.do("cancel it", chromedp.Click(chromedp.ID("task-cancel")))
	b.until("see it cancelled", `document.querySelector("#task-state").dataset.state === "cancelled"`)
	if got := b.text("#task-cancel-answer"); !strings.Contains(got, "Cancelled") {
		t.Errorf("cancel answer = %q", got)
	}
	if b.visible("#task-cancel") {
		t.Error("the cancel button is still shown for a cancelled task")
	}
	if st := a.wait(adminKey, nap.ID).State; st != dockettype.StateCancelled {
		t.Errorf("state through the API = %s, want cancelled", st)
	}
	b.until("see the cancel in the timeline", `Array.from(document.querySelectorAll("#task-timeline li")).some(li => li.dataset.to === "cancelled")`)

	// Some traffic for the overview between its samples: finished tasks,
	// failures, and a submission refused by a tenant's limit.
	batch := func(from, n int) {
		t.Helper()
		var tasks []map[string]any
		for i := from; i < from+n; i++ {
			wf, input := "demo.echo", any(map[string]int{"n": i})
			if i%8 == 0 {
				wf, input = "demo.fail", map[string]any{"code": "demo_failure", "retryable": false}
			}
			tasks = append(tasks, map[string]any{"idempotency_key": fmt.Sprintf("b-%d", i), "workflow": wf, "input": input})
		}
		if st := a.call(http.MethodPost, "/v1/tasks/batch", adminKey, "", map[string]any{"tasks": tasks}, nil); st != http.StatusOK {
			t.Fatalf("batch: %d", st)
		}
	}
	if st := a.call(http.MethodPatch, "/v1/admin/tenants/globex", adminKey, "", map[string]int{"max_in_flight": 1}, nil); st != http.StatusOK {
		t.Fatalf("limit globex: %d", st)
	}
	g := a.submit(globex.Key, "g-1", map[string]any{"workflow": "demo.sleep", "input": map[string]int{"ms": 600000}})
	if st := a.call(http.MethodPost, "/v1/tasks", globex.Key, "g-2", map[string]any{"workflow": "demo.echo"}, nil); st != http.StatusTooManyRequests {
		t.Fatalf("globex over its limit: %d, want 429", st)
	}
	b.goTo("#/overview")
	b.do("open the overview", chromedp.WaitVisible(chromedp.ID("view-overview")))
	b.until("see the throughput chart", `document.querySelectorAll("#chart polyline").length === 2`)
	batch(0, 80)
	batch(80, 40)
	// Every task finished so far is in the chart's ten minutes: the three
	// above that succeeded, and the batches' 105 successes and 15 failures.
	b.until("see the batches in the chart", `document.querySelector("#chart").dataset.succeeded === "108" && document.querySelector("#chart").dataset.failed === "15"`)
	if got := b.text("#pool-cards"); !strings.Contains(got, "in flight of 10,000") {
		t.Errorf("pool cards = %q, want the capacity in use", got)
	}
	b.until("see the refusal by code", `document.querySelector("#rejections").textContent.includes("tenant_quota_exceeded")`)
	b.until("see globex's quota in use", `Array.from(document.querySelectorAll("#overview-tenants td")).some(td => td.textContent === "globex")`)
	b.keep(b.screenshot("overview"), "dashboard.png")

	b.do("open the task list", chromedp.Click(chromedp.ID("nav-tasks")), chromedp.WaitVisible(chromedp.ID("view-tasks")))
	b.until("see a page of tasks", `document.querySelectorAll("#tasks-table tbody tr").length === 50`)
	b.set("filter-state", "failed")
	b.do("filter failed tasks", submitForm("task-filters"))
	b.until("see only failed tasks", `Array.from(document.querySelectorAll("#tasks-table tbody tr")).every(tr => tr.dataset.state === "failed")`+
		` && document.querySelectorAll("#tasks-table tbody tr").length === 15`)
	b.set("filter-state", "")
	b.set("filter-workflow", "quality.evaluate")
	eval[chromedp.Void](b, `performance.clearResourceTimings()`)
	b.do("filter a workflow", submitForm("task-filters"))
	b.until("see only the quality task", fmt.Sprintf(`document.querySelectorAll("#tasks-table tbody tr").length === 1 && document.querySelector(%q) !== null`, row))
	// The API does the filter: the page asked for that workflow's tasks.
	if !eval[bool](b, `performance.getEntriesByType("resource").some(e => {
		const u = new URL(e.name);
		return u.pathname === "/v1/tasks" && u.searchParams.get("workflow") === "quality.evaluate";
	})`) {
		t.Error("the workflow filter was not sent to the API (no GET /v1/tasks?workflow=quality.evaluate)")
	}
	b.set("filter-workflow", "")
	b.do("clear the filters", submitForm("task-filters"))
	b.until("see a page of tasks again", `document.querySelectorAll("#tasks-table tbody tr").length === 50`)
	b.do("page to older tasks", chromedp.Click(chromedp.ID("page-next")))
	b.until("see the second page", `document.querySelector("#page-label").textContent === "page 2"`)
	first := eval[string](b, `document.querySelector("#tasks-table tbody tr").dataset.id`)
	b.do("page back", chromedp.Click(chromedp.ID("page-first")))
	b.until("see the first page", `document.querySelector("#page-label").textContent === "page 1"`)
	if newest := eval[string](b, `document.querySelector("#tasks-table tbody tr").dataset.id`); newest <= first {
		t.Errorf("first page starts at %s, second at %s: want newest first", newest, first)
	}
	b.screenshot("tasks")

	// Admin: tenants (edit a weight), keys (create one, see it once, revoke
	// it), scheduler health, rule set versions.
	b.do("open the admin view", chromedp.Click(chromedp.ID("nav-admin")),
		chromedp.WaitVisible(chromedp.CSS(`#admin-tenants tr[data-tenant="globex"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#admin-schedulers tr[data-scheduler="deadline"]`)),
		chromedp.WaitVisible(chromedp.ID("rules-empty")))
	eval[chromedp.Void](b, `document.querySelector('#admin-tenants tr[data-tenant="globex"] input[min="1"]').value = "3"`)
	b.do("change globex's weight", chromedp.Click(chromedp.CSS(`#admin-tenants tr[data-tenant="globex"] button`)))
	b.until("see it saved", `document.querySelector('#admin-tenants tr[data-tenant="globex"] .answer').textContent === "Saved."`)
	var tenants struct {
		Tenants []struct {
			ID          string
			Weight      int
			MaxInFlight int `json:"max_in_flight"`
		}
	}
	a.call(http.MethodGet, "/v1/admin/tenants", adminKey, "", nil, &tenants)
	for _, tn := range tenants.Tenants {
		if tn.ID == "globex" && (tn.Weight != 3 || tn.MaxInFlight != 1) {
			t.Errorf("globex after the edit = %+v, want weight 3 and its limit unchanged", tn)
		}
	}
	// Pause globex from its row: the row shows it paused and the API
	// lists it; the flow form resumes it.
	b.do("pause globex", chromedp.Click(chromedp.CSS(`#admin-tenants tr[data-tenant="globex"] button.small`)))
	b.until("see globex paused", `document.querySelector('#admin-tenants tr[data-tenant="globex"] .badge.paused') !== null`)
	var paused struct {
		Flow struct {
			Paused []map[string]string
		}
	}
	a.call(http.MethodGet, "/v1/admin/stats", adminKey, "", nil, &paused)
	if len(paused.Flow.Paused) != 1 || paused.Flow.Paused[0]["tenant"] != "globex" {
		t.Errorf("paused after the dashboard's pause = %v, want tenant globex", paused.Flow.Paused)
	}
	b.set("flow-scope", "tenant")
	b.set("flow-name", "globex")
	b.do("resume globex from the form", chromedp.Click(chromedp.ID("flow-resume")))
	b.until("see nothing paused", `document.getElementById("flow-answer").textContent === "Nothing is paused."`)
	b.until("see globex's badge gone", `document.querySelector('#admin-tenants tr[data-tenant="globex"] .badge.paused') === null`)

	// A pause that refuses submissions, from the flow form with its box
	// ticked: the answer, the tenant's row and the workflows view say so,
	// submits of its tasks are refused (409 submissions_paused), through
	// the API and the page's form; the resume admits the same request.
	b.set("flow-scope", "workflow")
	b.set("flow-name", "demo.echo")
	b.do("tick refuse submissions", chromedp.Click(chromedp.ID("flow-refuse")))
	b.do("pause demo.echo, refusing submissions", chromedp.Click(chromedp.ID("flow-pause")))
	b.until("see demo.echo paused, refusing", `document.getElementById("flow-answer").textContent === "Paused: workflow demo.echo (refusing submissions)."`)
	if eval[bool](b, `document.getElementById("flow-refuse").checked`) {
		t.Error("the refuse box stays ticked after its pause")
	}
	b.set("flow-scope", "tenant")
	b.set("flow-name", "globex")
	b.do("tick refuse submissions again", chromedp.Click(chromedp.ID("flow-refuse")))
	b.do("pause globex, refusing submissions", chromedp.Click(chromedp.ID("flow-pause")))
	b.until("see both paused, refusing", `document.getElementById("flow-answer").textContent === `+
		`"Paused: tenant globex (refusing submissions), workflow demo.echo (refusing submissions)."`)
	b.until("see globex's row refusing", `(document.querySelector('#admin-tenants tr[data-tenant="globex"] .badge.paused.refusing') || {}).textContent === "paused · refusing submissions"`)
	b.screenshot("admin-refusing")
	var refusing struct {
		Flow struct {
			Paused []map[string]any
		}
	}
	a.call(http.MethodGet, "/v1/admin/stats", adminKey, "", nil, &refusing)
	if want := []map[string]any{{"tenant": "globex", "refuse_submissions": true}, {"workflow": "demo.echo", "refuse_submissions": true}}; !reflect.DeepEqual(refusing.Flow.Paused, want) {
		t.Errorf("paused after the form's pauses = %v, want %v", refusing.Flow.Paused, want)
	}
	if st, code := a.refusal(http.MethodPost, "/v1/tasks", adminKey, "refused-1", map[string]any{"workflow": "demo.echo", "input": 1}); st != http.StatusConflict || code != "submissions_paused" {
		t.Errorf("a submit of the refusing workflow: %d %s, want 409 submissions_paused", st, code)
	}
	b.do("resume globex from its row", chromedp.Click(chromedp.CSS(`#admin-tenants tr[data-tenant="globex"] button.small`)))
	b.until("see globex's refusing badge gone", `document.querySelector('#admin-tenants tr[data-tenant="globex"] .badge.paused') === null`)
	b.do("open the workflows view", chromedp.Click(chromedp.ID("nav-workflows")), chromedp.WaitVisible(chromedp.ID("view-workflows")))
	b.until("see demo.echo refusing in the workflows view", `(document.querySelector('#workflows-table tr[data-workflow="demo.echo"] td.flow .badge.paused.refusing') || {}).textContent === "paused · refusing submissions"`)
	b.screenshot("workflows-refusing")
	b.do("open the task list again", chromedp.Click(chromedp.ID("nav-tasks")), chromedp.WaitVisible(chromedp.ID("view-tasks")))
	if !b.visible("#new-input") {
		b.do("open the new task form again", chromedp.Click(chromedp.ID("new-task-toggle")), chromedp.WaitVisible(chromedp.ID("new-input")))
	}
	b.set("new-workflow", "demo.echo")
	b.set("new-input", `{"from": "the dashboard, refused"}`)
	b.do("submit the refusing workflow from the page", submitForm("new-task"))
	b.until("see the page's submit refused", `document.getElementById("new-answer").textContent.startsWith("Refused — submissions_paused: ")`)
	b.screenshot("refusing-submissions")
	b.do("back to the admin view", chromedp.Click(chromedp.ID("nav-admin")), chromedp.WaitVisible(chromedp.ID("flow-form")))
	b.set("flow-scope", "workflow")
	b.set("flow-name", "demo.echo")
	b.do("resume demo.echo from the form", chromedp.Click(chromedp.ID("flow-resume")))
	b.until("see nothing paused again", `document.getElementById("flow-answer").textContent === "Nothing is paused."`)
	a.submit(adminKey, "refused-1", map[string]any{"workflow": "demo.echo", "input": 1})
	b.set("key-tenant", "not a name")
	if !eval[bool](b, `document.getElementById("key-tenant").validity.patternMismatch`) {
		t.Error("the key form accepts a tenant name the API refuses")
	}
	b.set("key-tenant", "")
	b.do("create a key",
		chromedp.SendKeys(chromedp.ID("key-tenant"), "initech"),
		chromedp.SendKeys(chromedp.ID("key-principal"), "ivan"),
		submitForm("key-form"),
		chromedp.WaitVisible(chromedp.ID("new-key")))
	newKey := b.text("#new-key-value")
	if st := a.call(http.MethodGet, "/v1/tasks?limit=1", newKey, "", nil, nil); st != http.StatusOK {
		t.Fatalf("the key the dashboard showed: %d, want 200", st)
	}
	b.screenshot("admin")
	b.do("dismiss the new key", chromedp.Click(chromedp.ID("new-key-done")))
	if b.text("#new-key-value") != "" {
		t.Error("the new key stays on the page after Done")
	}
	var keys struct {
		Keys []struct{ ID, Principal string }
	}
	a.call(http.MethodGet, "/v1/admin/keys?tenant=initech", adminKey, "", nil, &keys)
	if len(keys.Keys) != 1 {
		t.Fatalf("initech keys = %+v", keys.Keys)
	}
	keyRow := fmt.Sprintf(`#admin-keys tr[data-key=%q]`, keys.Keys[0].ID)
	b.do("revoke it", chromedp.Click(chromedp.CSS(keyRow+" button")))
	b.until("see it revoked", fmt.Sprintf(`document.querySelector(%q).classList.contains("revoked")`, keyRow))
	if st := a.call(http.MethodGet, "/v1/tasks?limit=1", newKey, "", nil, nil); st != http.StatusUnauthorized {
		t.Errorf("a revoked key: %d, want 401", st)
	}
	if n := eval[int](b, `document.querySelectorAll("#admin-schedulers tbody tr").length`); n < 3 {
		t.Errorf("scheduler rows = %d, want recovery, heartbeat and deadline at least", n)
	}

	// Sign out: the key is gone from the tab.
	b.do("sign out", chromedp.Click(chromedp.ID("signout")), chromedp.WaitVisible(chromedp.ID("signin-key")))
	if eval[bool](b, `sessionStorage.getItem("docket.apiKey") !== null`) {
		t.Error("the key is still in sessionStorage after signing out")
	}

	// Another tenant's member key: its own task only, no admin views.
	b.do("sign in as a globex member",
		chromedp.SendKeys(chromedp.ID("signin-key"), globex.Key),
		submitForm("signin-form"),
		chromedp.WaitVisible(chromedp.ID("view-tasks")))
	b.until("see globex's task", fmt.Sprintf(`document.querySelector(%q) !== null`, fmt.Sprintf(`#tasks-table tr[data-id=%q]`, g.ID)))
	ids := eval[[]string](b, `Array.from(document.querySelectorAll("#tasks-table tbody tr")).map(tr => tr.dataset.id)`)
	if len(ids) != 1 || ids[0] != g.ID {
		t.Errorf("globex's list = %v, want only its task %s", ids, g.ID)
	}
	if b.visible("#nav-admin") || b.visible("#nav-overview") || b.visible("#nav-workflows") || b.visible("#nav-workers") {
		t.Error("a member key sees the admin views in the menu")
	}
	b.goTo("#/tasks/" + q.ID)
	b.do("open demo's task with globex's key", chromedp.WaitVisible(chromedp.ID("task-missing")))
	if b.visible("#task-body") {
		t.Error("another tenant's task is shown")
	}
	b.goTo("#/admin")
	b.do("open the admin view as a member", chromedp.WaitVisible(chromedp.ID("view-forbidden")))
	if b.visible("#view-admin") {
		t.Error("a member key sees the admin view")
	}
	b.goTo("#/overview")
	b.do("open the overview as a member", chromedp.WaitVisible(chromedp.ID("view-forbidden")))
	if b.visible("#view-overview") || b.visible("#pool-cards") {
		t.Error("a member key sees the overview")
	}
	for _, v := range []string{"workflows", "workers"} {
		b.goTo("#/tasks")
		b.do("back to the list", chromedp.WaitVisible(chromedp.ID("view-tasks")))
		b.goTo("#/" + v)
		b.do("open the "+v+" view as a member", chromedp.WaitVisible(chromedp.ID("view-forbidden")))
		if b.visible("#view-" + v) {
			t.Errorf("a member key sees the %s view", v)
		}
	}
	b.screenshot("member")
	a.call(http.MethodPost, "/v1/tasks/"+g.ID+"/cancel", globex.Key, "", nil, nil)
}

// The overview's chart draws the service's history: tasks that finished
// before the page was opened, on a node that has restarted since, are in
// it from the first load.
func TestDashboardChartShowsHistoryInBrowser(t *testing.T) {
	b := newBrowser(t)
	db := filepath.Join(t.TempDir(), "docket.db")
	url, adminKey, stop := startNode(t, db)
	a := newAPI(t, url)
	var tasks []map[string]any
	for i := range 36 {
		wf, input := "demo.echo", any(map[string]int{"n": i})
		if i%6 == 0 {
			wf, input = "demo.fail", map[string]any{"code": "demo_failure", "retryable": false}
		}
		tasks = append(tasks, map[string]any{"idempotency_key": fmt.Sprintf("h-%d", i), "workflow": wf, "input": input})
	}
	var res struct {
		Results []struct{ Task *dockettype.Task }
	}
	if st := a.call(http.MethodPost, "/v1/tasks/batch", adminKey, "", map[string]any{"tasks": tasks}, &res); st != http.StatusOK || len(res.Results) != 36 {
		t.Fatalf("batch: %d, %d results", st, len(res.Results))
	}
	for _, r := range res.Results {
		if st := a.wait(adminKey, r.Task.ID).State; st != dockettype.StateSucceeded && st != dockettype.StateFailed {
			t.Fatalf("task %s ended %s", r.Task.ID, st)
		}
	}
	stop()

	url, _, _ = startNode(t, db)
	b.signInAsAdmin(url, adminKey)
	b.until("see the finished tasks in the chart", `document.querySelector("#chart").dataset.succeeded === "30" && document.querySelector("#chart").dataset.failed === "6"`)
	// Both lines rise above the zero line (the first grid line).
	drawn := eval[bool](b, `(() => {
		const zero = Number(document.querySelector("#chart line.grid").getAttribute("y1"));
		const top = (cls) => Math.min(...document.querySelector("#chart polyline." + cls).getAttribute("points").split(" ").map((p) => Number(p.split(",")[1])));
		return top("line-ok") < zero && top("line-bad") < zero;
	})()`)
	if !drawn {
		t.Errorf("the chart does not draw the finished tasks: %s", eval[string](b, `document.querySelector("#chart").innerHTML`))
	}
}

// signInAsAdmin opens the dashboard at url and signs in with an admin key;
// the overview is the admin's first view.
func (b *browser) signInAsAdmin(url, key string) {
	b.t.Helper()
	b.do("sign in",
		chromedp.Navigate(url+"/ui"),
		chromedp.WaitVisible(chromedp.ID("signin-key")),
		chromedp.SendKeys(chromedp.ID("signin-key"), key),
		submitForm("signin-form"),
		chromedp.WaitVisible(chromedp.ID("view-overview")))
}

// gate is a proxy in front of the server that can hold one request until
// the test lets it go: the way to answer the browser late, on cue.
type gate struct {
	t       *testing.T
	URL     string
	mu      sync.Mutex
	pending *hold // the armed hold, nil when none
}

// hold is one armed request: arrived is closed when the request reached
// the proxy, answered when the server's answer went back to the browser.
type hold struct {
	match    func(*http.Request) bool
	arrived  chan struct{}
	release  chan struct{}
	answered chan struct{}
	once     sync.Once
}

// open lets the held request through (at once, if it has not arrived yet).
func (h *hold) open() { h.once.Do(func() { close(h.release) }) }

func newGate(t *testing.T, url string) *gate {
	target, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	forward := httputil.NewSingleHostReverseProxy(target)
	g := &gate{t: t}
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		h := g.pending
		if h != nil && h.match(r) {
			g.pending = nil
		} else {
			h = nil
		}
		g.mu.Unlock()
		if h == nil {
			forward.ServeHTTP(w, r)
			return
		}
		close(h.arrived)
		<-h.release
		forward.ServeHTTP(w, r)
		close(h.answered)
	}))
	t.Cleanup(proxy.Close)
	g.URL = proxy.URL
	return g
}

// arm holds the next request that match accepts. Its release is
// registered for cleanup before the test can fail on it: it runs before
// the proxy's Close, which waits for held requests.
func (g *gate) arm(match func(*http.Request) bool) *hold {
	h := &hold{match: match, arrived: make(chan struct{}), release: make(chan struct{}), answered: make(chan struct{})}
	g.t.Cleanup(h.open)
	g.mu.Lock()
	g.pending = h
	g.mu.Unlock()
	return h
}

// waitFor waits for ch to close; 30 s only turns a hang into a failure.
func waitFor(t *testing.T, what string, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("no %s in 30 s", what)
	}
}

// firstListPage matches the browser's read of the task list's first page.
func firstListPage(r *http.Request) bool {
	return r.Method == http.MethodGet && r.URL.Path == "/v1/tasks" && r.URL.Query().Get("after") == ""
}

// The task list refreshes itself every few seconds. An auto-refresh of page
// 1 answered after the operator moved to page 2 must not replace page 2's
// rows: the page stays what its label says. A proxy in front of the server
// holds that refresh's answer until the browser shows page 2.
func TestDashboardTaskPagesIgnoreStaleAnswers(t *testing.T) {
	b := newBrowser(t)
	url, adminKey := startServer(t)
	a := newAPI(t, url)
	for i := range 30 { // two pages of 25
		a.submit(adminKey, fmt.Sprintf("page-%d", i), map[string]any{"workflow": "demo.echo"})
	}
	proxy := newGate(t, url)

	b.signInAsAdmin(proxy.URL, adminKey)
	b.set("filter-limit", "25")
	b.do("open the task list", chromedp.Click(chromedp.ID("nav-tasks")), chromedp.WaitVisible(chromedp.ID("view-tasks")))
	b.until("see page 1", `document.querySelectorAll("#tasks-table tbody tr").length === 25 && !document.querySelector("#page-next").disabled`)
	pageOne := eval[string](b, `document.querySelector("#tasks-table tbody tr").dataset.id`)

	refresh := proxy.arm(firstListPage)
	waitFor(t, "auto-refresh of page 1", refresh.arrived)
	b.do("page to older tasks", chromedp.Click(chromedp.ID("page-next")))
	b.until("see page 2", `document.querySelector("#page-label").textContent === "page 2"`)
	pageTwo := eval[string](b, `document.querySelector("#tasks-table tbody tr").dataset.id`)
	if pageTwo == pageOne {
		t.Fatalf("page 2 starts with page 1's task %s", pageOne)
	}
	// From here on, record the first row of every render of the table.
	eval[chromedp.Void](b, `window.renders = [];
		new MutationObserver(() => {
			const tr = document.querySelector("#tasks-table tbody tr");
			window.renders.push(tr ? tr.dataset.id : "");
		}).observe(document.querySelector("#tasks-table tbody"), { childList: true })`)

	// Let page 1's refresh answer, then wait for two refreshes of page 2
	// (every 3 s) to render after it.
	refresh.open()
	waitFor(t, "answer to page 1's refresh", refresh.answered)
	b.until("see page 2 rendered again", `window.renders.length >= 2`)
	renders := eval[[]string](b, `window.renders`)
	for _, id := range renders {
		if id != pageTwo {
			t.Errorf("the table showed a page starting at %s under the label %q; want page 2 (starting at %s) only; page 1 starts at %s",
				id, b.text("#page-label"), pageTwo, pageOne)
			break
		}
	}
}

// Each view refreshes itself on a timer set once its first load answers.
// An overview whose first load answered after the operator had already
// opened the task list must not take the timer over: the list on screen
// keeps refreshing. A proxy holds the overview's first read until the list
// is on screen.
func TestDashboardLateViewKeepsCurrentRefresh(t *testing.T) {
	b := newBrowser(t)
	url, adminKey := startServer(t)
	a := newAPI(t, url)
	a.submit(adminKey, "late-view", map[string]any{"workflow": "demo.echo"})
	proxy := newGate(t, url)

	overview := proxy.arm(func(r *http.Request) bool { return r.URL.Path == "/metrics" })
	b.signInAsAdmin(proxy.URL, adminKey)
	waitFor(t, "first read of the overview", overview.arrived)
	b.do("open the task list", chromedp.Click(chromedp.ID("nav-tasks")), chromedp.WaitVisible(chromedp.ID("view-tasks")))
	b.until("see the task", `document.querySelectorAll("#tasks-table tbody tr").length === 1`)

	overview.open()
	waitFor(t, "answer to the overview's first read", overview.answered)
	// The list refreshes every 3 s; let the next refresh through at once.
	refresh := proxy.arm(firstListPage)
	refresh.open()
	waitFor(t, "auto-refresh of the task list after the overview answered", refresh.answered)
	if !b.visible("#view-tasks") {
		t.Error("the task list is no longer on screen")
	}
}

// workerCall is a worker API call with a worker key; it fails the test
// unless the answer is 200.
func (a *api) workerCall(path, key string, body, out any) {
	a.t.Helper()
	if st := a.call(http.MethodPost, path, key, "", body, out); st != http.StatusOK {
		a.t.Fatalf("POST %s: %d, want 200", path, st)
	}
}

// The page is ES modules: every one of them loads (no console error, each
// answered 200), and the operator works with remote workers: registers a
// remote workflow, sees the 409 of a built-in name, removes one, makes a
// worker key for all tenants in the admin view, and sees the worker that
// claimed with it in the Workers view. A route that does not decode shows
// the not-found view; task IDs are told apart by their ends, found by the
// search, and the list shows how long each task ran.
func TestDashboardRemoteWorkersInBrowser(t *testing.T) {
	b := newBrowser(t)
	url, adminKey := startServer(t)
	a := newAPI(t, url)
	b.signInAsAdmin(url, adminKey)

	// Every module the assets folder holds was loaded, once, answered 200.
	entries, err := os.ReadDir("assets")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".js") {
			want = append(want, "/ui/"+e.Name()+" 200")
		}
	}
	got := eval[[]string](b, `performance.getEntriesByType("resource").map(e => [new URL(e.name).pathname, e.responseStatus]).
		filter(([p]) => p.endsWith(".js")).map(([p, s]) => p + " " + s).sort()`)
	if !slices.Equal(got, want) {
		t.Errorf("modules loaded = %v,\nwant %v", got, want)
	}

	// Workflows: the built-in ones are listed and marked, with their flow
	// control.
	if st := a.call(http.MethodPatch, "/v1/admin/workflows/demo.sleep", adminKey, "",
		map[string]int{"rate_per_second": 20, "burst": 5, "concurrency_per_key": 3}, nil); st != http.StatusOK {
		t.Fatalf("PATCH demo.sleep: %d, want 200", st)
	}
	b.do("open the workflows view", chromedp.Click(chromedp.ID("nav-workflows")),
		chromedp.WaitVisible(chromedp.CSS(`#workflows-table tr[data-workflow="demo.echo"][data-remote="false"]`)))
	if txt := b.text(`#workflows-table tr[data-workflow="demo.echo"]`); !strings.Contains(txt, "built-in") || strings.Contains(txt, "Remove") {
		t.Errorf("built-in row = %q, want it marked built-in, without Remove", txt)
	}
	if txt := b.text(`#workflows-table tr[data-workflow="demo.sleep"] td.flow`); txt != "20/s (burst 5) · 3 per key" {
		t.Errorf("demo.sleep's flow control = %q, want the PATCH's limits", txt)
	}

	// Register two remote workflows through the form.
	register := func(name, pool, timeout, attempts string) {
		t.Helper()
		b.set("workflow-name", name)
		b.choose("workflow-pool", pool)
		b.set("workflow-timeout", timeout)
		b.set("workflow-attempts", attempts)
		b.do("register "+name, submitForm("workflow-form"))
	}
	register("images.resize", "offline", "60000", "2")
	b.until("see it registered", `document.querySelector("#workflow-answer").textContent.startsWith("Registered images.resize (200)")`+
		` && document.querySelector('#workflows-table tr[data-workflow="images.resize"][data-remote="true"]') !== null`)
	if txt := b.text(`#workflows-table tr[data-workflow="images.resize"]`); !strings.Contains(txt, "remote") ||
		!strings.Contains(txt, "offline") || !strings.Contains(txt, "1 min") || !strings.Contains(txt, "2") {
		t.Errorf("remote row = %q, want remote, its pool, default timeout and attempts", txt)
	}
	var wfs struct {
		Workflows []struct {
			Name        string
			Pool        string
			TimeoutMS   int64 `json:"timeout_ms"`
			MaxAttempts int   `json:"max_attempts"`
			Remote      bool
		}
	}
	a.call(http.MethodGet, "/v1/admin/workflows", adminKey, "", nil, &wfs)
	found := false
	for _, w := range wfs.Workflows {
		if w.Name == "images.resize" {
			found = w.Pool == "offline" && w.TimeoutMS == 60000 && w.MaxAttempts == 2 && w.Remote
		}
	}
	if !found {
		t.Errorf("the API's workflows = %+v, want images.resize as the form registered it", wfs.Workflows)
	}
	register("thumbs.make", "online", "", "")
	b.until("see the second one", `document.querySelector('#workflows-table tr[data-workflow="thumbs.make"]') !== null`)

	// A built-in name is the API's 409, shown as it came.
	register("demo.echo", "online", "", "")
	b.until("see the refusal", `document.querySelector("#workflow-answer").textContent.includes("409 builtin_workflow")`)
	if !strings.Contains(eval[string](b, `document.querySelector("#workflow-answer").className`), "bad") {
		t.Error("the refusal is not shown as one")
	}

	// Remove one.
	b.do("remove thumbs.make", chromedp.Click(chromedp.CSS(`#workflows-table tr[data-workflow="thumbs.make"] button`)))
	b.until("see it removed", `document.querySelector("#workflow-answer").textContent.startsWith("Removed thumbs.make (200)")`+
		` && document.querySelector('#workflows-table tr[data-workflow="thumbs.make"]') === null`)
	if st := a.call(http.MethodPost, "/v1/tasks", adminKey, "thumb-1", map[string]any{"workflow": "thumbs.make"}, nil); st != http.StatusBadRequest {
		t.Errorf("submit of a removed workflow: %d, want 400", st)
	}
	b.screenshot("workflows")

	// A worker key for every tenant, made in the admin view.
	b.do("open the admin view", chromedp.Click(chromedp.ID("nav-admin")), chromedp.WaitVisible(chromedp.ID("key-form")))
	if !eval[bool](b, `document.getElementById("key-all-tenants").disabled`) {
		t.Error(`"all tenants" is offered to a member key`)
	}
	b.set("key-tenant", "demo")
	b.set("key-principal", "resize-fleet")
	b.choose("key-role", "worker")
	b.do("make a worker key for all tenants", chromedp.Click(chromedp.ID("key-all-tenants")), submitForm("key-form"),
		chromedp.WaitVisible(chromedp.ID("new-key")))
	if owner := b.text("#new-key-owner"); owner != "resize-fleet (worker, all tenants) of tenant demo" {
		t.Errorf("new key owner = %q", owner)
	}
	workerKey := b.text("#new-key-value")
	b.do("dismiss the new key", chromedp.Click(chromedp.ID("new-key-done")))
	var keys struct {
		Keys []struct {
			ID, Principal, Role string
			AllTenants          bool `json:"all_tenants"`
		}
	}
	a.call(http.MethodGet, "/v1/admin/keys?tenant=demo", adminKey, "", nil, &keys)
	var keyID string
	for _, k := range keys.Keys {
		if k.Principal == "resize-fleet" && k.Role == "worker" && k.AllTenants {
			keyID = k.ID
		}
	}
	if keyID == "" {
		t.Fatalf("keys = %+v, want resize-fleet's worker key for all tenants", keys.Keys)
	}
	b.until("see the key listed", fmt.Sprintf(`(document.querySelector('#admin-keys tr[data-key=%q]') || {}).textContent.includes("worker, all tenants")`, keyID))

	// The worker claims a task with that key and heartbeats its lease.
	q := a.submit(adminKey, "resize-1", map[string]any{"workflow": "images.resize", "input": map[string]string{"image": "a.png"}})
	var claimed struct {
		Tasks []struct {
			Lease string
			Task  dockettype.Task
		}
	}
	a.workerCall("/v1/worker/claim", workerKey, map[string]any{"workflows": []string{"images.resize"}, "max": 1,
		"worker_id": "resize-host/1", "slots": 4, "sdk": "test/0.1"}, &claimed)
	if len(claimed.Tasks) != 1 || claimed.Tasks[0].Task.ID != q.ID {
		t.Fatalf("claimed %+v, want the task %s", claimed.Tasks, q.ID)
	}
	a.workerCall("/v1/worker/heartbeat", workerKey, map[string]any{"leases": []string{claimed.Tasks[0].Lease}, "worker_id": "resize-host/1"}, nil)

	// The Workers view shows it once a node has written what it saw.
	b.do("open the workers view", chromedp.Click(chromedp.ID("nav-workers")), chromedp.WaitVisible(chromedp.ID("view-workers")))
	worker := `#workers-table tr[data-worker="resize-host/1"]`
	b.until("see the worker with its lease", fmt.Sprintf(`(() => {
		const tr = document.querySelector(%q);
		if (!tr) return false;
		const cells = Array.from(tr.cells, td => td.textContent);
		return cells[5] === "1" && tr.dataset.connected === "true";
	})()`, worker))
	cells := eval[[]string](b, fmt.Sprintf(`Array.from(document.querySelector(%q).cells, td => td.textContent)`, worker))
	wantCells := []string{"resize-host/1", keyID, "all tenants", "images.resize", "4", "1", "", "test/0.1", "connected"}
	if len(cells) != len(wantCells) {
		t.Fatalf("worker row = %q, want %q", cells, wantCells)
	}
	for i, w := range wantCells {
		if w != "" && cells[i] != w {
			t.Errorf("worker row cell %d = %q, want %q (row %q)", i, cells[i], w, cells)
		}
	}
	if !strings.HasSuffix(cells[6], " ago") {
		t.Errorf("last seen = %q, want a time ago", cells[6])
	}
	b.screenshot("workers")
	a.workerCall("/v1/worker/finish", workerKey, map[string]any{"items": []map[string]any{
		{"lease": claimed.Tasks[0].Lease, "outcome": "succeeded", "result": map[string]string{"url": "a-small.png"}}}}, nil)

	// A route that does not decode, or that names no view, is not found:
	// the view before leaves the screen, nothing is thrown.
	for _, bad := range []string{"#/tasks/%E0%A4%A", "#/nowhere", "#/tasks/a/b"} {
		b.goTo("#/workers")
		b.do("back to the workers", chromedp.WaitVisible(chromedp.ID("view-workers")))
		b.goTo(bad)
		b.do("open "+bad, chromedp.WaitVisible(chromedp.ID("view-notfound")))
		if b.visible("#view-workers") || b.visible("#view-task") {
			t.Errorf("%s: the view before stays on screen", bad)
		}
		if got := b.text("#notfound-path"); got != bad {
			t.Errorf("%s: the not-found view names %q", bad, got)
		}
	}

	// Tasks made in one batch share the start of their IDs (UUIDv7): the
	// list shows their ends, the whole ID in a title, and their durations.
	var batch struct {
		Results []struct{ Task dockettype.Task }
	}
	if st := a.call(http.MethodPost, "/v1/tasks/batch", adminKey, "", map[string]any{"tasks": []map[string]any{
		{"idempotency_key": "same-1", "workflow": "demo.echo", "input": 1},
		{"idempotency_key": "same-2", "workflow": "demo.echo", "input": 2},
		{"idempotency_key": "same-3", "workflow": "demo.sleep", "input": map[string]int{"ms": 600000}},
	}}, &batch); st != http.StatusOK || len(batch.Results) != 3 {
		t.Fatalf("batch: %d, %+v", st, batch.Results)
	}
	echo1, echo2, nap := batch.Results[0].Task, batch.Results[1].Task, batch.Results[2].Task
	a.wait(adminKey, echo1.ID)
	a.wait(adminKey, echo2.ID)
	b.do("open the task list", chromedp.Click(chromedp.ID("nav-tasks")), chromedp.WaitVisible(chromedp.ID("view-tasks")))
	b.until("see the sleeping task run", fmt.Sprintf(`(document.querySelector('#tasks-table tr[data-id=%q]') || {dataset: {}}).dataset.state === "running"`, nap.ID))
	shown := map[string]string{}
	for _, task := range []dockettype.Task{echo1, echo2, nap} {
		sel := fmt.Sprintf(`#tasks-table tr[data-id=%q]`, task.ID)
		link := eval[[]string](b, fmt.Sprintf(`(() => { const a = document.querySelector(%q); return [a.textContent, a.title]; })()`, sel+" a"))
		if link[0] != "…"+task.ID[len(task.ID)-8:] || link[1] != task.ID {
			t.Errorf("task %s is shown as %q (title %q), want its last 8 characters and the whole ID", task.ID, link[0], link[1])
		}
		if other, ok := shown[link[0]]; ok {
			t.Errorf("tasks %s and %s are shown alike: %q", other, task.ID, link[0])
		}
		shown[link[0]] = task.ID
	}
	durationRE := regexp.MustCompile(`^\d+(\.\d)? (ms|s|min)`)
	for _, task := range []dockettype.Task{echo1, echo2} {
		if d := b.text(fmt.Sprintf(`#tasks-table tr[data-id=%q] td.duration`, task.ID)); !durationRE.MatchString(d) {
			t.Errorf("duration of finished task %s = %q", task.ID, d)
		}
	}
	if d := b.text(fmt.Sprintf(`#tasks-table tr[data-id=%q] td.duration`, nap.ID)); !strings.HasPrefix(d, "running for ") {
		t.Errorf("duration of the running task = %q, want running for …", d)
	}
	b.screenshot("tasks")

	// The search opens a task by its whole ID; its page shows the ID whole.
	b.do("search a task by ID", chromedp.SendKeys(chromedp.ID("task-search-id"), echo2.ID), submitForm("task-search"),
		chromedp.WaitVisible(chromedp.ID("task-result")))
	if got := b.text("#task-id"); got != echo2.ID {
		t.Errorf("task page ID = %q, want %s", got, echo2.ID)
	}
	if href := eval[string](b, `location.hash`); href != "#/tasks/"+echo2.ID {
		t.Errorf("the search went to %s", href)
	}
	a.call(http.MethodPost, "/v1/tasks/"+nap.ID+"/cancel", adminKey, "", nil, nil)
}

// The Schedules view lists a schedule with its next fire times and last
// runs (with their tasks' states), and pauses and resumes it; the task page
// of a task that waits says so and links the task it depends on.
func TestDashboardSchedulesAndDependenciesInBrowser(t *testing.T) {
	b := newBrowser(t)
	url, adminKey := startServer(t)
	a := newAPI(t, url)

	// A task that waits on a running one.
	first := a.submit(adminKey, "slow-1", map[string]any{"workflow": "demo.sleep", "input": map[string]int{"ms": 120000}})
	waiting := a.submit(adminKey, "after-1", map[string]any{"workflow": "demo.echo", "depends_on": []string{first.ID}})
	if waiting.WaitingOn != dockettype.WaitingOnDependencies {
		t.Fatalf("waiting_on = %q, want dependencies", waiting.WaitingOn)
	}
	if st := a.call(http.MethodPut, "/v1/admin/schedules/every.second", adminKey, "", map[string]any{
		"tenant": "demo", "workflow": "demo.echo", "input": map[string]int{"n": 1}, "cron": "* * * * * *",
		"overlap": "allow", "missed": "skip"}, nil); st != http.StatusCreated {
		t.Fatalf("create schedule: %d", st)
	}

	b.signInAsAdmin(url, adminKey)
	b.goTo("#/tasks")
	b.until("see the waiting task in the list", `document.querySelector('#tasks-table tr[data-id="`+waiting.ID+`"] .waiting') !== null &&
		document.querySelector('#tasks-table tr[data-id="`+waiting.ID+`"] .waiting').textContent.includes("waiting on dependencies")`)
	b.goTo("#/tasks/" + waiting.ID)
	b.until("see the dependency", `document.querySelector("#task-deps") && !document.querySelector("#task-deps").hidden`)
	if txt := b.text("#task-fields"); !strings.Contains(txt, "dependencies") {
		t.Errorf("task fields = %q, want waiting on dependencies", txt)
	}
	if got := eval[string](b, `document.querySelector("#task-depends-on a").getAttribute("href")`); got != "#/tasks/"+first.ID {
		t.Errorf("dependency link = %q, want #/tasks/%s", got, first.ID)
	}
	b.do("follow the dependency link", chromedp.Click(chromedp.CSS("#task-depends-on a")))
	b.until("land on the dependency", `document.querySelector("#task-id").textContent === "`+first.ID+`" && document.querySelector("#task-deps").hidden`)
	// Cancelling the dependency cancels the waiting task, which says why.
	if st := a.call(http.MethodPost, "/v1/tasks/"+first.ID+"/cancel", adminKey, "", nil, nil); st != http.StatusOK {
		t.Fatalf("cancel: %d", st)
	}
	b.goTo("#/tasks/" + waiting.ID)
	b.until("see it cancelled with its dependency", `document.querySelector("#task-state").dataset.state === "cancelled" &&
		document.querySelector("#task-error-code") !== null && document.querySelector("#task-error-code").textContent === "dependency_failed"`)

	b.do("open the schedules view", chromedp.Click(chromedp.ID("nav-schedules")),
		chromedp.WaitVisible(chromedp.CSS(`#schedules-table tr[data-schedule="every.second"][data-paused="false"]`)))
	if n := eval[int](b, `document.querySelectorAll('#schedules-table tr[data-schedule="every.second"] td.next div').length`); n != 3 {
		t.Errorf("next fire times shown = %d, want 3", n)
	}
	b.do("show its runs", chromedp.Click(chromedp.CSS(`#schedules-table tr[data-schedule="every.second"] button[data-action="runs"]`)))
	b.until("see a run with its state", `document.querySelector("#schedule-runs-name").textContent === "every.second" &&
		document.querySelector("#schedule-runs-table tbody tr .state") !== null`)

	b.do("pause it", chromedp.Click(chromedp.CSS(`#schedules-table tr[data-schedule="every.second"] button[data-action="pause"]`)))
	b.until("see it paused", `document.querySelector('#schedules-table tr[data-schedule="every.second"][data-paused="true"]') !== null`)
	var sched struct{ Paused bool }
	a.call(http.MethodGet, "/v1/admin/schedules/every.second", adminKey, "", nil, &sched)
	if !sched.Paused {
		t.Error("the API says the schedule is not paused after Pause")
	}
	b.do("resume it", chromedp.Click(chromedp.CSS(`#schedules-table tr[data-schedule="every.second"] button[data-action="resume"]`)))
	b.until("see it active", `document.querySelector('#schedules-table tr[data-schedule="every.second"][data-paused="false"]') !== null`)
	a.call(http.MethodGet, "/v1/admin/schedules/every.second", adminKey, "", nil, &sched)
	if sched.Paused {
		t.Error("the API says the schedule is paused after Resume")
	}
	if problems := b.consoleProblems(); len(problems) > 0 {
		t.Errorf("console problems: %v", problems)
	}
}

// An operator sees a failed task's input, retries it from its page, then
// finds the failures grouped in the dead-letter view, retries the group in
// bulk and discards it, in a real headless Chromium against a real server.
func TestDashboardFailuresInBrowser(t *testing.T) {
	b := newBrowser(t)
	url, adminKey := startServer(t)
	a := newAPI(t, url)
	var ids []string
	for i := range 3 {
		task := a.submit(adminKey, fmt.Sprint("fail-", i), map[string]any{"workflow": "demo.fail",
			"input": map[string]string{"code": "upstream_down"}, "max_attempts": 1})
		if got := a.wait(adminKey, task.ID); got.State != dockettype.StateFailed {
			t.Fatalf("demo.fail task %s, want failed", got.State)
		}
		ids = append(ids, task.ID)
	}
	b.signInAsAdmin(url, adminKey)

	// The task page shows the input as admitted, and a Retry button.
	b.goTo("#/tasks/" + ids[0])
	b.until("see the task fail", `document.querySelector("#task-state").dataset.state === "failed"`)
	b.until("see its input", `document.querySelector("#task-input").textContent.includes("upstream_down")`)
	if !b.visible("#task-retry") || b.visible("#task-cancel") {
		t.Error("a failed task's page shows no Retry button, or a Cancel one")
	}
	b.do("retry it", chromedp.Click(chromedp.ID("task-retry")))
	b.until("see the retry answered", `document.querySelector("#task-cancel-answer").textContent.startsWith("Retried")`)
	b.until("see the retried event", `Array.from(document.querySelectorAll("#task-timeline code")).some(c => c.textContent === "retried")`)
	b.until("see it fail again", `document.querySelector("#task-state").dataset.state === "failed"`)

	// The dead letters: one group of three, retried in bulk, then discarded.
	b.do("open the dead letters", chromedp.Click(chromedp.ID("nav-deadletters")), chromedp.WaitVisible(chromedp.ID("view-deadletters")))
	row := `#deadletters-table tr[data-workflow="demo.fail"][data-code="upstream_down"]`
	b.until("see the group", fmt.Sprintf(`(() => { const r = document.querySelector(%q); return !!r && r.children[3].textContent === "3"; })()`, row))
	b.do("retry the group", chromedp.Click(chromedp.CSS(row+" button:not(.danger)")))
	b.until("see the bulk retry done", `document.querySelector("#deadletters-answer").dataset.state === "done"`)
	if got := b.text("#deadletters-answer"); !strings.Contains(got, "3 retried") {
		t.Errorf("bulk retry answer = %q, want 3 retried", got)
	}
	for _, id := range ids {
		a.wait(adminKey, id) // each fails again
	}
	b.until("see the group again", fmt.Sprintf(`document.querySelector(%q) !== null`, row))
	b.do("arm the discard", chromedp.Click(chromedp.CSS(row+" button.danger")))
	if got := b.text(row + " button.danger"); got != "Confirm discard" {
		t.Errorf("discard button after one click = %q, want Confirm discard", got)
	}
	// The table is redrawn every two seconds: the armed discard outlives
	// the redraw (it was once reset by it, between a user's two clicks).
	updated := b.text("#deadletters-updated")
	b.until("see the table redrawn", fmt.Sprintf(`document.querySelector("#deadletters-updated").textContent !== %q`, updated))
	if got := b.text(row + " button.danger"); got != "Confirm discard" {
		t.Errorf("discard button after a redraw = %q, want Confirm discard", got)
	}
	b.do("discard the group", chromedp.Click(chromedp.CSS(row+" button.danger")))
	b.until("see the discard done", `document.querySelector("#deadletters-answer").textContent.includes("3 discarded")`)
	b.until("see no dead letter left", `document.querySelector("#deadletters-empty").offsetParent !== null`)
	for _, id := range ids {
		if st := a.call(http.MethodGet, "/v1/tasks/"+id, adminKey, "", nil, nil); st != http.StatusNotFound {
			t.Errorf("discarded task %s: status %d, want 404", id, st)
		}
	}
}

// The task list shows scheduled tasks apart, with their run_at; selected
// tasks are cancelled from it, and every task matching its filter is
// retried in bulk.
func TestDashboardTaskListActionsInBrowser(t *testing.T) {
	b := newBrowser(t)
	url, adminKey := startServer(t)
	a := newAPI(t, url)
	later := time.Now().UTC().Add(time.Hour).Format(time.RFC3339)
	var ids []string
	for i := range 2 {
		ids = append(ids, a.submit(adminKey, fmt.Sprint("later-", i), map[string]any{"workflow": "demo.echo", "run_at": later}).ID)
	}
	b.signInAsAdmin(url, adminKey)
	b.do("open the task list", chromedp.Click(chromedp.ID("nav-tasks")), chromedp.WaitVisible(chromedp.ID("view-tasks")))
	row := func(id string) string { return fmt.Sprintf(`#tasks-table tr[data-id=%q]`, id) }
	b.until("see the scheduled tasks", fmt.Sprintf(`(document.querySelector(%q) || {dataset: {}}).dataset.scheduled === "true"`, row(ids[0])))
	if txt := b.text(row(ids[0])); !strings.Contains(txt, "scheduled") || !strings.Contains(txt, " at ") {
		t.Errorf("scheduled row = %q, want it marked scheduled with its run_at", txt)
	}

	b.do("select both", chromedp.Click(chromedp.CSS(row(ids[0])+" input.select")), chromedp.Click(chromedp.CSS(row(ids[1])+" input.select")))
	b.do("cancel the selected", chromedp.Click(chromedp.ID("bulk-cancel-selected")))
	b.until("see them cancelled", `document.querySelector("#tasks-bulk-answer").textContent.startsWith("Cancelled 2 of 2")`)
	for _, id := range ids {
		var task dockettype.Task
		a.call(http.MethodGet, "/v1/tasks/"+id, adminKey, "", nil, &task)
		if task.State != dockettype.StateCancelled {
			t.Errorf("task %s is %s after Cancel selected, want cancelled", id, task.State)
		}
	}

	b.choose("filter-state", "cancelled")
	b.until("see the cancelled ones", fmt.Sprintf(`(document.querySelector(%q) || {dataset: {}}).dataset.state === "cancelled"`, row(ids[1])))
	b.do("retry all that match", chromedp.Click(chromedp.ID("bulk-retry-all")))
	b.until("see the bulk retry done", `document.querySelector("#tasks-bulk-answer").dataset.state === "done"`)
	if got := b.text("#tasks-bulk-answer"); !strings.Contains(got, "2 done") {
		t.Errorf("bulk answer = %q, want 2 done", got)
	}
	for _, id := range ids {
		if task := a.wait(adminKey, id); task.State != dockettype.StateSucceeded {
			t.Errorf("task %s is %s after the bulk retry, want succeeded (it runs at once)", id, task.State)
		}
	}
}
