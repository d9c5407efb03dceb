package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
)

// pausedJSON is the answer of pause and resume: each item names its
// target and may say "refuse_submissions": true.
type pausedJSON struct {
	Paused []map[string]any `json:"paused"`
}

// pauseCmd is docket pause (paused) or docket resume: exactly one of
// --pool, --tenant, --workflow; docket pause may add
// --refuse-submissions.
func pauseCmd(paused bool) func(args []string, stdout, stderr io.Writer) error {
	name, path := "resume", "/v1/admin/resume"
	if paused {
		name, path = "pause", "/v1/admin/pause"
	}
	return func(args []string, stdout, stderr io.Writer) error {
		fs := newFlags(name, stderr)
		u, key := clientFlags(fs)
		pool := fs.String("pool", "", "the pool (online or offline)")
		tenant := fs.String("tenant", "", "the tenant")
		workflow := fs.String("workflow", "", "the workflow (built-in or remote)")
		refuse := new(bool)
		usage := fmt.Sprintf("usage: docket %s --pool P | --tenant T | --workflow W", name)
		if paused {
			refuse = fs.Bool("refuse-submissions", false,
				"also refuse its submissions (409 submissions_paused) until it is resumed, instead of admitting them to wait")
			usage += " [--refuse-submissions]"
		}
		asJSON := fs.Bool("json", !isTerminal(stdout), "print the API's JSON; default: a summary on a terminal, JSON otherwise")
		pos, err := parse(fs, args)
		if err != nil {
			return err
		}
		body := map[string]any{}
		for scope, v := range map[string]string{"pool": *pool, "tenant": *tenant, "workflow": *workflow} {
			if v != "" {
				body[scope] = v
			}
		}
		if len(pos) != 0 || len(body) != 1 {
			return errors.New(usage)
		}
		if *refuse {
			body["refuse_submissions"] = true
		}
		c, err := newClient(*u, *key)
		if err != nil {
			return err
		}
		var out pausedJSON
		if err := c.Call(context.Background(), "POST", path, body, &out); err != nil {
			return err
		}
		if *asJSON {
			return printJSON(stdout, out)
		}
		if len(out.Paused) == 0 {
			fmt.Fprintln(stdout, "nothing is paused")
			return nil
		}
		fmt.Fprintln(stdout, "paused:")
		for _, p := range out.Paused {
			for _, scope := range []string{"pool", "tenant", "workflow"} {
				if v, ok := p[scope].(string); ok {
					note := ""
					if p["refuse_submissions"] == true {
						note = " (refusing submissions)"
					}
					fmt.Fprintf(stdout, "  %s %s%s\n", scope, v, note)
				}
			}
		}
		return nil
	}
}

// limitValue is a flag that is an integer or "none" (null: remove).
type limitValue struct {
	set  bool
	none bool
	n    int
}

func (v *limitValue) String() string {
	switch {
	case !v.set:
		return ""
	case v.none:
		return "none"
	}
	return strconv.Itoa(v.n)
}

func (v *limitValue) Set(s string) error {
	v.set = true
	if s == "none" {
		v.none = true
		return nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return errors.New(`an integer or "none"`)
	}
	v.n = n
	return nil
}

func (v *limitValue) json() any {
	if v.none {
		return nil
	}
	return v.n
}

// limitsCmd is docket limits: a tenant's or a workflow's rate limit, and
// a workflow's concurrency per key.
func limitsCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("limits", stderr)
	u, key := clientFlags(fs)
	tenant := fs.String("tenant", "", "the tenant whose starts to limit")
	workflow := fs.String("workflow", "", "the workflow whose starts (every tenant's) to limit")
	var rate, burst, perKey limitValue
	fs.Var(&rate, "rate", `most starts per second, all nodes together ("none" removes the limit)`)
	fs.Var(&burst, "burst", "extra starts a one-second window may hold (default 0)")
	fs.Var(&perKey, "concurrency-per-key", `a workflow's most running tasks per concurrency key ("none": 1)`)
	fs.Bool("json", true, "print the API's JSON (the only output)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 || (*tenant == "") == (*workflow == "") {
		return errors.New("usage: docket limits --tenant T | --workflow W [--rate N|none] [--burst N] [--concurrency-per-key N|none]")
	}
	body := map[string]any{}
	if rate.set {
		body["rate_per_second"] = rate.json()
	}
	if burst.set {
		body["burst"] = burst.json()
	}
	path := "/v1/admin/workflows/" + url.PathEscape(*workflow)
	if *tenant != "" {
		if perKey.set {
			return errors.New("--concurrency-per-key is a workflow's")
		}
		path = "/v1/admin/tenants/" + url.PathEscape(*tenant)
	} else if perKey.set {
		body["concurrency_per_key"] = perKey.json()
	}
	c, err := newClient(*u, *key)
	if err != nil {
		return err
	}
	var out map[string]any
	if err := c.Call(context.Background(), "PATCH", path, body, &out); err != nil {
		return err
	}
	return printJSON(stdout, out)
}
