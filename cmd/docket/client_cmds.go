package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"

	"github.com/docket-dev/docket/client"
	"github.com/docket-dev/docket/dockettype"
)

// clientFlags adds --url and --key to a client command.
func clientFlags(fs *flag.FlagSet) (url, key *string) {
	url = fs.String("url", "http://127.0.0.1:8080", "Docket server URL")
	key = fs.String("key", "", "API key")
	return url, key
}

func newClient(url, key string) (*client.Client, error) {
	if key == "" {
		return nil, errors.New("no API key: pass --key or set DOCKET_API_KEY")
	}
	return client.New(url, key), nil
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// readInput reads --input: inline JSON, @FILE, or - for stdin.
func readInput(v string) (json.RawMessage, error) {
	var b []byte
	var err error
	switch {
	case v == "-":
		b, err = io.ReadAll(os.Stdin)
	case strings.HasPrefix(v, "@"):
		b, err = os.ReadFile(v[1:])
	default:
		b = []byte(v)
	}
	if err != nil {
		return nil, err
	}
	if !json.Valid(b) {
		return nil, errors.New("--input is not valid JSON")
	}
	return b, nil
}

func submitCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("submit", stderr)
	url, key := clientFlags(fs)
	wf := fs.String("workflow", "", "registered workflow name (required)")
	input := fs.String("input", "null", "task input: JSON, @FILE, or - for stdin")
	idem := fs.String("idempotency-key", "", "idempotency key (default: a new random key)")
	pool := fs.String("pool", "", "online or offline (default: the workflow's pool)")
	timeoutMS := fs.Int64("timeout-ms", 0, "task deadline in milliseconds (default: the server's)")
	priority := fs.Int("priority", 0, "priority within the tenant (-1000..1000)")
	maxAttempts := fs.Int("max-attempts", 0, "attempts before failing (default: the server's)")
	wait := durationFlag(fs, "wait", 0, "wait up to this long for the task to finish")
	runAt := fs.String("run-at", "", "start the task no earlier than this RFC 3339 time (its deadline counts from it)")
	concurrencyKey := fs.String("concurrency-key", "", "run at most the workflow's concurrency_per_key (default 1) of the tenant's tasks with this key at once")
	delay := durationFlag(fs, "delay", 0, "start the task no earlier than this long from now (instead of --run-at)")
	dependsOn := fs.String("depends-on", "", "comma-separated IDs of tasks this one waits for (it runs once all succeeded)")
	onDepFail := fs.String("on-dependency-failure", "", `when a dependency fails, times out or is cancelled: "fail" (default) or "run"`)
	asJSON := fs.Bool("json", !isTerminal(stdout), "print the API's JSON (the task); default: a summary on a terminal, JSON otherwise")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	if *wf == "" {
		return errors.New("--workflow is required")
	}
	var at time.Time
	switch {
	case *runAt != "" && *delay != 0:
		return errors.New("give --run-at or --delay, not both")
	case *runAt != "":
		t, err := time.Parse(time.RFC3339Nano, *runAt)
		if err != nil {
			return errors.New("--run-at must be an RFC 3339 time, e.g. 2026-12-01T09:00:00Z")
		}
		at = t
	case *delay < 0:
		return errors.New("--delay must not be negative")
	case *delay > 0:
		at = time.Now().Add(*delay)
	}
	in, err := readInput(*input)
	if err != nil {
		return err
	}
	if *idem == "" {
		*idem = uuid.NewString()
	}
	c, err := newClient(*url, *key)
	if err != nil {
		return err
	}
	ctx := context.Background()
	res, err := c.Submit(ctx, &client.SubmitParams{
		IdempotencyKey: *idem, Workflow: *wf, Input: in, Pool: dockettype.Pool(*pool),
		TimeoutMS: *timeoutMS, Priority: *priority, MaxAttempts: *maxAttempts, RunAt: at,
		DependsOn: splitList(*dependsOn), OnDependencyFailure: *onDepFail,
		ConcurrencyKey: *concurrencyKey,
	})
	if err != nil {
		return err
	}
	task := res.Task
	if *wait > 0 {
		if task, err = c.Wait(ctx, task.ID, *wait); err != nil {
			return err
		}
	}
	if *asJSON {
		return printJSON(stdout, task)
	}
	return printTaskSummary(stdout, task)
}

// printTaskSummary prints one task for a person: its main fields, then its
// result or error once it has finished, or how to follow it.
func printTaskSummary(w io.Writer, t *dockettype.Task) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	row := func(k, format string, a ...any) { fmt.Fprintf(tw, "%s\t"+format+"\n", append([]any{k}, a...)...) }
	row("id", "%s", t.ID)
	row("state", "%s", t.State)
	row("workflow", "%s (pool %s)", t.Workflow, t.Pool)
	row("attempt", "%d/%d", t.Attempt, t.MaxAttempts)
	row("created", "%s", t.CreatedAt.Local().Format(time.DateTime))
	if t.RunAt != nil {
		row("runs at", "%s", t.RunAt.Local().Format(time.DateTime))
	}
	if t.WaitingOn != "" {
		row("waiting on", "%s", t.WaitingOn)
	}
	if len(t.DependsOn) > 0 {
		row("depends on", "%s", strings.Join(t.DependsOn, ", "))
	}
	if t.FinishedAt != nil {
		row("finished", "%s", t.FinishedAt.Local().Format(time.DateTime))
	}
	if len(t.Result) > 0 && string(t.Result) != "null" {
		row("result", "%s", t.Result)
	}
	if t.Error != nil {
		row("error", "%s: %s", t.Error.Code, t.Error.Message)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if !t.State.Terminal() {
		fmt.Fprintf(w, "\nfollow it: docket get --wait 30s %s\n", t.ID)
	}
	return nil
}

// idArg parses a command that takes one task ID, before or after its
// flags (docket get --wait 5s ID, docket get ID --wait 5s).
func idArg(name string, args []string, stderr io.Writer, extra func(*flag.FlagSet)) (*client.Client, string, error) {
	fs := newFlags(name, stderr)
	url, key := clientFlags(fs)
	if extra != nil {
		extra(fs)
	}
	pos, err := parse(fs, args)
	if err != nil {
		return nil, "", err
	}
	if len(pos) != 1 {
		fmt.Fprintf(stderr, "usage: docket %s %s\nRun 'docket %s --help' for its flags.\n", name, commandHelp[name].args, name)
		return nil, "", errUsage
	}
	c, err := newClient(*url, *key)
	return c, pos[0], err
}

func getCmd(args []string, stdout, stderr io.Writer) error {
	var wait *time.Duration
	c, id, err := idArg("get", args, stderr, func(fs *flag.FlagSet) {
		wait = durationFlag(fs, "wait", 0, "wait up to this long for the task to finish")
	})
	if err != nil {
		return err
	}
	if *wait > 0 {
		task, err := c.Wait(context.Background(), id, *wait)
		if err != nil {
			return err
		}
		return printJSON(stdout, task)
	}
	task, err := c.Get(context.Background(), id)
	if err != nil {
		return err
	}
	return printJSON(stdout, task)
}

func cancelCmd(args []string, stdout, stderr io.Writer) error {
	c, id, err := idArg("cancel", args, stderr, nil)
	if err != nil {
		return err
	}
	task, err := c.Cancel(context.Background(), id)
	if err != nil {
		return err
	}
	return printJSON(stdout, task)
}

func eventsCmd(args []string, stdout, stderr io.Writer) error {
	c, id, err := idArg("events", args, stderr, nil)
	if err != nil {
		return err
	}
	events, err := c.Events(context.Background(), id)
	if err != nil {
		return err
	}
	return printJSON(stdout, events)
}

func evidenceCmd(args []string, stdout, stderr io.Writer) error {
	c, id, err := idArg("evidence", args, stderr, nil)
	if err != nil {
		return err
	}
	ev, err := c.Evidence(context.Background(), id)
	if err != nil {
		return err
	}
	return printJSON(stdout, ev)
}

func listCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("list", stderr)
	url, key := clientFlags(fs)
	state := fs.String("state", "", "only tasks in this state")
	pool := fs.String("pool", "", "only tasks of this pool")
	workflow := fs.String("workflow", "", "only tasks of this workflow (its exact name)")
	limit := fs.Int("limit", 50, "page size (1..500)")
	after := fs.String("after", "", "cursor: the next value of the previous page")
	asJSON := fs.Bool("json", !isTerminal(stdout), "print the API's JSON ({\"tasks\":[…],\"next\":…}); default: a table on a terminal, JSON otherwise")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	c, err := newClient(*url, *key)
	if err != nil {
		return err
	}
	page, err := c.List(context.Background(), &client.ListParams{State: dockettype.State(*state), Pool: dockettype.Pool(*pool), Workflow: *workflow,
		Limit: *limit, After: *after})
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, listPage{Tasks: page.Tasks, Next: page.Next})
	}
	return printTaskTable(stdout, page)
}

// listPage is a page as the API spells it (GET /v1/tasks).
type listPage struct {
	Tasks []*dockettype.Task `json:"tasks"`
	Next  string             `json:"next,omitempty"`
}

// printTaskTable prints a page as a table, and how to get the next one.
func printTaskTable(w io.Writer, page *client.ListResult) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tWORKFLOW\tPOOL\tATTEMPT\tCREATED\tERROR")
	for _, t := range page.Tasks {
		code := "-"
		if t.Error != nil {
			code = string(t.Error.Code)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d/%d\t%s\t%s\n", t.ID, t.State, t.Workflow, t.Pool,
			t.Attempt, t.MaxAttempts, t.CreatedAt.Local().Format(time.DateTime), code)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(page.Tasks) == 0 {
		fmt.Fprintln(w, "(no tasks)")
	}
	if page.Next != "" {
		fmt.Fprintf(w, "\nnext page: add --after %s\n", page.Next)
	}
	return nil
}

// isTerminal reports whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// splitList splits a comma-separated flag value, dropping empty entries.
func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
