package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"text/tabwriter"
	"time"
)

func retryCmd(args []string, stdout, stderr io.Writer) error {
	c, id, err := idArg("retry", args, stderr, nil)
	if err != nil {
		return err
	}
	task, err := c.Retry(context.Background(), id)
	if err != nil {
		return err
	}
	return printJSON(stdout, task)
}

const bulkUsage = `usage: docket bulk cancel|retry|delete [--state S] [--workflow W] [--pool P] [--error-code C]
                    [--created-before T] [--created-after T] [--tenant T | --all-tenants] [--wait D] [flags]
       docket bulk status [--admin] [--wait D] ID
       docket bulk stop [--admin] ID

A bulk action cancels (queued, running), retries (failed, timed_out,
cancelled) or deletes (terminal, now) every task the filter matches, as a
job the server runs in batches; the command prints the job, and with
--wait follows it until it ends. A member key acts on its own tenant's
tasks; an admin key with --tenant T or --all-tenants acts through the
admin API (status and stop then need --admin).

Run 'docket bulk retry --help' (or status, stop) for its flags.
`

// bulkJSON is a bulk job as the API shows it.
type bulkJSON struct {
	ID         string         `json:"id"`
	Action     string         `json:"action"`
	Filter     map[string]any `json:"filter"`
	State      string         `json:"state"`
	Matched    int            `json:"matched"`
	Done       int            `json:"done"`
	Skipped    int            `json:"skipped"`
	Failed     int            `json:"failed"`
	By         map[string]any `json:"by"`
	CreatedAt  time.Time      `json:"created_at"`
	UpdatedAt  time.Time      `json:"updated_at"`
	FinishedAt *time.Time     `json:"finished_at"`
}

func bulkCmd(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return groupHelp(args, bulkUsage, stderr)
	}
	switch args[0] {
	case "cancel", "retry", "delete":
		return bulkStartCmd(args[0], args[1:], stdout, stderr)
	case "status":
		return bulkJobCmd("status", "GET", "", args[1:], stdout, stderr)
	case "stop":
		return bulkJobCmd("stop", "POST", "/cancel", args[1:], stdout, stderr)
	}
	return groupHelp(args, bulkUsage, stderr)
}

// bulkPollInterval is how often --wait reads a running job.
const bulkPollInterval = 250 * time.Millisecond

func bulkStartCmd(action string, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bulk "+action, stderr)
	u, key := clientFlags(fs)
	filter := map[string]*string{}
	for _, f := range []struct{ flag, field, usage string }{
		{"state", "state", "only tasks in this state"},
		{"workflow", "workflow", "only tasks of this workflow"},
		{"pool", "pool", "only tasks of this pool (online, offline)"},
		{"error-code", "error_code", "only tasks with this error code"},
		{"created-before", "created_before", "only tasks created before this RFC 3339 time"},
		{"created-after", "created_after", "only tasks created after this RFC 3339 time"},
		{"tenant", "tenant", "admin key: only this tenant's tasks (through the admin API)"},
	} {
		filter[f.field] = fs.String(f.flag, "", f.usage)
	}
	all := fs.Bool("all-tenants", false, "admin key: every tenant's tasks (through the admin API)")
	wait := durationFlag(fs, "wait", 0, "follow the job for up to this long, until it ends")
	asJSON := fs.Bool("json", !isTerminal(stdout), "print the API's JSON (the job); default: a summary on a terminal, JSON otherwise")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return fmt.Errorf("usage: docket bulk %s [flags] (no arguments)", action)
	}
	f := map[string]string{}
	for field, v := range filter {
		if *v != "" {
			f[field] = *v
		}
	}
	admin := *all || f["tenant"] != ""
	if *all && f["tenant"] != "" {
		return errors.New("--tenant and --all-tenants exclude each other")
	}
	c, err := newClient(*u, *key)
	if err != nil {
		return err
	}
	path := "/v1/tasks/bulk"
	if admin {
		path = "/v1/admin/bulk"
	}
	var job bulkJSON
	if err := c.Call(context.Background(), "POST", path, map[string]any{"action": action, "filter": f}, &job); err != nil {
		return err
	}
	return followBulk(c.Call, admin, &job, *wait, *asJSON, stdout)
}

func bulkJobCmd(name, method, suffix string, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bulk "+name, stderr)
	u, key := clientFlags(fs)
	admin := fs.Bool("admin", false, "the job was started through the admin API (--tenant, --all-tenants)")
	var wait *time.Duration
	if name == "status" {
		wait = durationFlag(fs, "wait", 0, "follow the job for up to this long, until it ends")
	}
	asJSON := fs.Bool("json", !isTerminal(stdout), "print the API's JSON (the job); default: a summary on a terminal, JSON otherwise")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("usage: docket bulk %s [flags] ID", name)
	}
	c, err := newClient(*u, *key)
	if err != nil {
		return err
	}
	var job bulkJSON
	if err := c.Call(context.Background(), method, bulkPath(*admin, pos[0])+suffix, nil, &job); err != nil {
		return err
	}
	var d time.Duration
	if wait != nil {
		d = *wait
	}
	return followBulk(c.Call, *admin, &job, d, *asJSON, stdout)
}

func bulkPath(admin bool, id string) string {
	if admin {
		return "/v1/admin/bulk/" + url.PathEscape(id)
	}
	return "/v1/bulk/" + url.PathEscape(id)
}

// followBulk reads the job every bulkPollInterval while it runs, for up
// to wait, then prints it.
func followBulk(call func(ctx context.Context, method, path string, in, out any) error, admin bool, job *bulkJSON,
	wait time.Duration, asJSON bool, stdout io.Writer) error {
	if wait > 0 {
		deadline := time.Now().Add(wait)
		tick := time.NewTicker(bulkPollInterval)
		defer tick.Stop()
		for job.State == "running" && time.Now().Before(deadline) {
			<-tick.C
			if err := call(context.Background(), "GET", bulkPath(admin, job.ID), nil, job); err != nil {
				return err
			}
		}
	}
	if asJSON {
		return printJSON(stdout, job)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "job\t%s\naction\t%s\nstate\t%s\nmatched\t%d\ndone\t%d\nskipped\t%d\nfailed\t%d\n",
		job.ID, job.Action, job.State, job.Matched, job.Done, job.Skipped, job.Failed)
	return tw.Flush()
}

func deadLettersCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("dead-letters", stderr)
	u, key := clientFlags(fs)
	admin := fs.Bool("admin", false, "admin key: every tenant's (or --tenant's) failed tasks")
	tenant := fs.String("tenant", "", "with --admin: only this tenant's")
	asJSON := fs.Bool("json", !isTerminal(stdout), "print the API's JSON; default: a table on a terminal, JSON otherwise")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	c, err := newClient(*u, *key)
	if err != nil {
		return err
	}
	path := "/v1/tasks/dead-letters"
	if *admin {
		path = "/v1/admin/dead-letters"
		if *tenant != "" {
			path += "?tenant=" + url.QueryEscape(*tenant)
		}
	}
	var out struct {
		Groups []struct {
			Tenant   string    `json:"tenant"`
			Workflow string    `json:"workflow"`
			Code     string    `json:"error_code"`
			Count    int       `json:"count"`
			Oldest   time.Time `json:"oldest_failed_at"`
			Newest   time.Time `json:"newest_failed_at"`
		} `json:"groups"`
	}
	if err := c.Call(context.Background(), "GET", path, nil, &out); err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, out)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TENANT\tWORKFLOW\tERROR CODE\tCOUNT\tOLDEST\tNEWEST")
	for _, g := range out.Groups {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", g.Tenant, g.Workflow, g.Code, g.Count,
			g.Oldest.Format(time.RFC3339), g.Newest.Format(time.RFC3339))
	}
	return tw.Flush()
}
