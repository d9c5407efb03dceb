package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"text/tabwriter"
	"time"
)

const schedulesUsage = `usage: docket schedules put NAME --tenant T --workflow W --cron EXPR [--input JSON] [--time-zone Z]
                       [--pool P] [--timeout-ms N] [--max-attempts N] [--overlap allow|skip]
                       [--missed skip|catch_up] [--catch-up-limit N] [--paused] [flags]
       docket schedules list [flags]
       docket schedules get NAME [flags]
       docket schedules pause NAME [flags]
       docket schedules resume NAME [flags]
       docket schedules delete NAME [flags]

A schedule fires one task of its tenant at every time of its cron
expression (5 fields, 6 with seconds first, or @hourly, @every 90s, …) in
its time zone; each fire time makes one task whatever the number of nodes.
These commands call a running server's admin API with an admin key
(--url/DOCKET_URL, --key/DOCKET_API_KEY). A schedule name is 1 to 128
characters of [a-z0-9._-].

Run 'docket schedules put --help' (or list, get, …) for its flags.
`

func schedulesCmd(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return groupHelp(args, schedulesUsage, stderr)
	}
	switch args[0] {
	case "put":
		return schedulesPutCmd(args[1:], stdout, stderr)
	case "list":
		return schedulesListCmd(args[1:], stdout, stderr)
	case "get":
		return scheduleCmd("get", "GET", "", args[1:], stdout, stderr)
	case "pause":
		return scheduleCmd("pause", "POST", "/pause", args[1:], stdout, stderr)
	case "resume":
		return scheduleCmd("resume", "POST", "/resume", args[1:], stdout, stderr)
	case "delete":
		return schedulesDeleteCmd(args[1:], stdout, stderr)
	}
	return groupHelp(args, schedulesUsage, stderr)
}

// scheduleJSON is a schedule as the admin API shows it.
type scheduleJSON struct {
	Name          string          `json:"name"`
	Tenant        string          `json:"tenant"`
	Workflow      string          `json:"workflow"`
	Input         json.RawMessage `json:"input"`
	Cron          string          `json:"cron"`
	TimeZone      string          `json:"time_zone"`
	Pool          *string         `json:"pool"`
	TimeoutMS     int64           `json:"timeout_ms"`
	MaxAttempts   int             `json:"max_attempts"`
	Overlap       string          `json:"overlap"`
	Missed        string          `json:"missed"`
	CatchUpLimit  int             `json:"catch_up_limit"`
	Paused        bool            `json:"paused"`
	NextFireTimes []time.Time     `json:"next_fire_times"`
	LastTaskID    *string         `json:"last_task_id"`
	LastFireAt    *time.Time      `json:"last_fire_at"`
	Fired         int64           `json:"fired"`
	MissedFires   int64           `json:"missed_fires"`
	Skipped       int64           `json:"skipped"`
	LastError     *string         `json:"last_error"`
	CreatedAt     time.Time       `json:"created_at"`
	UpdatedAt     time.Time       `json:"updated_at"`
	Runs          *[]struct {
		FireAt time.Time `json:"fire_at"`
		TaskID string    `json:"task_id"`
		State  *string   `json:"state"`
	} `json:"runs,omitempty"`
}

func schedulesPutCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("schedules put", stderr)
	u, key := clientFlags(fs)
	tenant := fs.String("tenant", "", "the tenant its tasks belong to (required)")
	wf := fs.String("workflow", "", "the workflow it fires (required)")
	cron := fs.String("cron", "", `when it fires (required): 5 fields, 6 with seconds first, or @hourly, @every 90s, …`)
	input := fs.String("input", "", "the JSON input of every task (default null)")
	tz := fs.String("time-zone", "", "IANA time zone the cron expression is read in (default UTC)")
	pool := fs.String("pool", "", "online or offline (default: the workflow's)")
	timeoutMS := fs.Int64("timeout-ms", 0, "each task's timeout in milliseconds (0: the default)")
	maxAttempts := fs.Int("max-attempts", 0, "each task's attempts (0: the default)")
	overlap := fs.String("overlap", "allow", "allow, or skip: no fire while the previous task is queued or running")
	missed := fs.String("missed", "skip", "what fire times no node handled in time become: skip (dropped) or catch_up")
	catchUp := fs.Int("catch-up-limit", 0, "with --missed catch_up: how many missed times a gap fires (default 1, at most 100)")
	paused := fs.Bool("paused", false, "create it paused")
	asJSON := fs.Bool("json", !isTerminal(stdout), "print the API's JSON (the schedule); default: a summary on a terminal, JSON otherwise")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || *tenant == "" || *wf == "" || *cron == "" {
		return errors.New("usage: docket schedules put NAME --tenant T --workflow W --cron EXPR")
	}
	body := map[string]any{"tenant": *tenant, "workflow": *wf, "cron": *cron, "overlap": *overlap, "missed": *missed}
	if *input != "" {
		if !json.Valid([]byte(*input)) {
			return errors.New("--input must be JSON")
		}
		body["input"] = json.RawMessage(*input)
	}
	for name, v := range map[string]string{"time_zone": *tz, "pool": *pool} {
		if v != "" {
			body[name] = v
		}
	}
	if *timeoutMS != 0 {
		body["timeout_ms"] = *timeoutMS
	}
	if *maxAttempts != 0 {
		body["max_attempts"] = *maxAttempts
	}
	if *catchUp != 0 {
		body["catch_up_limit"] = *catchUp
	}
	if *paused {
		body["paused"] = true
	}
	c, err := newClient(*u, *key)
	if err != nil {
		return err
	}
	var sc scheduleJSON
	if err := c.Call(context.Background(), "PUT", "/v1/admin/schedules/"+url.PathEscape(pos[0]), body, &sc); err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, sc)
	}
	printSchedule(stdout, &sc)
	return nil
}

func schedulesListCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("schedules list", stderr)
	u, key := clientFlags(fs)
	asJSON := jsonFlag(fs, stdout, `{"schedules":[…]}`, "a table")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	c, err := newClient(*u, *key)
	if err != nil {
		return err
	}
	var out struct {
		Schedules []scheduleJSON `json:"schedules"`
	}
	if err := c.Call(context.Background(), "GET", "/v1/admin/schedules", nil, &out); err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, out)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tTENANT\tWORKFLOW\tCRON\tTIME_ZONE\tSTATE\tNEXT_FIRE\tFIRED\tMISSED\tSKIPPED")
	for _, s := range out.Schedules {
		state, next := "running", "-"
		if s.Paused {
			state = "paused"
		}
		if len(s.NextFireTimes) > 0 {
			next = s.NextFireTimes[0].Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\n", s.Name, s.Tenant, s.Workflow, s.Cron, s.TimeZone, state, next,
			s.Fired, s.MissedFires, s.Skipped)
	}
	return tw.Flush()
}

// scheduleCmd runs get, pause and resume: one call on one schedule that
// answers the schedule.
func scheduleCmd(name, method, suffix string, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("schedules "+name, stderr)
	u, key := clientFlags(fs)
	asJSON := fs.Bool("json", !isTerminal(stdout), "print the API's JSON (the schedule); default: a summary on a terminal, JSON otherwise")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("usage: docket schedules %s NAME", name)
	}
	c, err := newClient(*u, *key)
	if err != nil {
		return err
	}
	var sc scheduleJSON
	if err := c.Call(context.Background(), method, "/v1/admin/schedules/"+url.PathEscape(pos[0])+suffix, nil, &sc); err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, sc)
	}
	printSchedule(stdout, &sc)
	return nil
}

func schedulesDeleteCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("schedules delete", stderr)
	u, key := clientFlags(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return errors.New("usage: docket schedules delete NAME")
	}
	c, err := newClient(*u, *key)
	if err != nil {
		return err
	}
	if err := c.Call(context.Background(), "DELETE", "/v1/admin/schedules/"+url.PathEscape(pos[0]), nil, nil); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "deleted schedule %s: the tasks it made stay\n", pos[0])
	return nil
}

// printSchedule is the terminal form of one schedule: its definition, its
// next fire times in its time zone, and its latest runs when it has them.
func printSchedule(w io.Writer, s *scheduleJSON) {
	state := "running"
	if s.Paused {
		state = "paused"
	}
	pool := "(the workflow's)"
	if s.Pool != nil {
		pool = *s.Pool
	}
	fmt.Fprintf(w, "schedule %s (%s): %s for tenant %s, pool %s\n", s.Name, state, s.Workflow, s.Tenant, pool)
	fmt.Fprintf(w, "cron %q in %s; overlap %s; missed %s", s.Cron, s.TimeZone, s.Overlap, s.Missed)
	if s.Missed == "catch_up" {
		fmt.Fprintf(w, " (up to %d)", s.CatchUpLimit)
	}
	fmt.Fprintf(w, "\nfired %d, missed %d, skipped %d", s.Fired, s.MissedFires, s.Skipped)
	if s.LastError != nil {
		fmt.Fprintf(w, ", last refused: %s", *s.LastError)
	}
	fmt.Fprintln(w)
	loc, err := time.LoadLocation(s.TimeZone)
	if err != nil {
		loc = time.UTC
	}
	if len(s.NextFireTimes) > 0 {
		fmt.Fprintln(w, "next fire times:")
		for _, t := range s.NextFireTimes {
			fmt.Fprintf(w, "  %s  (%s)\n", t.In(loc).Format("2006-01-02 15:04:05 MST"), t.UTC().Format(time.RFC3339))
		}
	}
	if s.Runs != nil && len(*s.Runs) > 0 {
		fmt.Fprintln(w, "latest runs:")
		for _, r := range *s.Runs {
			st := "deleted"
			if r.State != nil {
				st = *r.State
			}
			fmt.Fprintf(w, "  %s  %s  %s\n", r.FireAt.UTC().Format(time.RFC3339), r.TaskID, st)
		}
	}
}
