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

const workflowsUsage = `usage: docket workflows register NAME --pool online|offline [--timeout-ms N] [--max-attempts N] [flags]
       docket workflows list [flags]
       docket workflows remove NAME [flags]

Remote workflows are trusted entry points that remote workers run (see
docs/worker-protocol.md). These commands call a running server's admin API
with an admin key (--url/DOCKET_URL, --key/DOCKET_API_KEY), which refuses a
name compiled into the server.

Run 'docket workflows register --help' (or list, remove) for its flags.
`

func workflowsCmd(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return groupHelp(args, workflowsUsage, stderr)
	}
	switch args[0] {
	case "register":
		return workflowsRegisterCmd(args[1:], stdout, stderr)
	case "list":
		return workflowsListCmd(args[1:], stdout, stderr)
	case "remove":
		return workflowsRemoveCmd(args[1:], stdout, stderr)
	}
	return groupHelp(args, workflowsUsage, stderr)
}

// workflowJSON is a workflow as GET /v1/admin/workflows shows it.
type workflowJSON struct {
	Name        string `json:"name"`
	Pool        string `json:"pool"`
	TimeoutMS   int64  `json:"timeout_ms"`
	MaxAttempts int    `json:"max_attempts"`
	Remote      bool   `json:"remote"`
}

func workflowsRegisterCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("workflows register", stderr)
	u, key := clientFlags(fs)
	pool := fs.String("pool", "", "online or offline (required): the pool whose capacity its tasks count against")
	timeoutMS := fs.Int64("timeout-ms", 0, "default deadline of its tasks in milliseconds (0: the server's)")
	maxAttempts := fs.Int("max-attempts", 0, "default attempts of its tasks (0: the server's)")
	asJSON := fs.Bool("json", !isTerminal(stdout), "print the API's JSON (the workflow); default: a line on a terminal, JSON otherwise")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || *pool == "" {
		return errors.New("usage: docket workflows register NAME --pool online|offline")
	}
	c, err := newClient(*u, *key)
	if err != nil {
		return err
	}
	body := map[string]any{"pool": *pool}
	if *timeoutMS != 0 {
		body["timeout_ms"] = *timeoutMS
	}
	if *maxAttempts != 0 {
		body["max_attempts"] = *maxAttempts
	}
	var wf workflowJSON
	if err := c.Call(context.Background(), "PUT", "/v1/admin/workflows/"+url.PathEscape(pos[0]), body, &wf); err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, wf)
	}
	fmt.Fprintf(stdout, "registered remote workflow %s (pool %s)\n", wf.Name, wf.Pool)
	return nil
}

func workflowsListCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("workflows list", stderr)
	u, key := clientFlags(fs)
	asJSON := jsonFlag(fs, stdout, `{"workflows":[…]}`, "a table")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	c, err := newClient(*u, *key)
	if err != nil {
		return err
	}
	var out struct {
		Workflows []workflowJSON `json:"workflows"`
	}
	if err := c.Call(context.Background(), "GET", "/v1/admin/workflows", nil, &out); err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, out)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tPOOL\tRUNS\tTIMEOUT_MS\tMAX_ATTEMPTS")
	for _, w := range out.Workflows {
		runs := "in the server"
		if w.Remote {
			runs = "remote workers"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\n", w.Name, w.Pool, runs, w.TimeoutMS, w.MaxAttempts)
	}
	return tw.Flush()
}

func workflowsRemoveCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("workflows remove", stderr)
	u, key := clientFlags(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return errors.New("usage: docket workflows remove NAME")
	}
	c, err := newClient(*u, *key)
	if err != nil {
		return err
	}
	if err := c.Call(context.Background(), "DELETE", "/v1/admin/workflows/"+url.PathEscape(pos[0]), nil, nil); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "removed remote workflow %s: new submissions of it are refused\n", pos[0])
	return nil
}

const workersUsage = `usage: docket workers list [flags]

Lists the remote workers any node answered in the last day, from a running
server's admin API (--url/DOCKET_URL, --key/DOCKET_API_KEY: an admin key).
`

func workersCmd(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "list" {
		return groupHelp(args, workersUsage, stderr)
	}
	fs := newFlags("workers list", stderr)
	u, key := clientFlags(fs)
	asJSON := jsonFlag(fs, stdout, `{"workers":[…]}`, "a table")
	if _, err := parse(fs, args[1:]); err != nil {
		return err
	}
	c, err := newClient(*u, *key)
	if err != nil {
		return err
	}
	var out struct {
		Workers []struct {
			ID         string    `json:"id"`
			KeyID      string    `json:"key_id"`
			Tenant     string    `json:"tenant"`
			AllTenants bool      `json:"all_tenants"`
			Workflows  []string  `json:"workflows"`
			Slots      int       `json:"slots"`
			Leases     int       `json:"leases"`
			SDK        string    `json:"sdk"`
			LastSeenAt time.Time `json:"last_seen_at"`
			Connected  bool      `json:"connected"`
		} `json:"workers"`
	}
	if err := c.Call(context.Background(), "GET", "/v1/admin/workers", nil, &out); err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, out)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKER\tTENANT\tWORKFLOWS\tSLOTS\tLEASES\tSDK\tLAST_SEEN\tCONNECTED")
	for _, w := range out.Workers {
		tenant := w.Tenant
		if w.AllTenants {
			tenant = "(all tenants)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\t%s\t%v\n", w.ID, tenant, len(w.Workflows), w.Slots, w.Leases, w.SDK,
			w.LastSeenAt.Format(time.RFC3339), w.Connected)
	}
	return tw.Flush()
}
