package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/docket-dev/docket/internal/defaults"
)

// errUsage: what was wrong has been printed already; exit 2.
var errUsage = errors.New("usage")

// helpError carries a command's help, asked for with -h or --help: it is
// printed on stdout and the exit status is 0.
type helpError struct{ text string }

func (e *helpError) Error() string { return "help requested" }

// commandHelp is what a command's --help says above its flags: the
// arguments after the command's name, and what it does.
var commandHelp = map[string]struct{ args, summary string }{
	"serve":              {"[flags]", "Run the HTTP API, the worker pools and the schedulers. Only serve and migrate create a SQLite database."},
	"migrate":            {"[flags]", "Create the database if it is missing and apply pending migrations."},
	"keys create":        {"--tenant T --principal P [--role member|admin] [flags]", "Create an API key and print it alone on stdout (it is not shown again). A missing tenant is created with --default-tenant-limit."},
	"keys list":          {"[--tenant T] [flags]", "List API keys (of one tenant, or all), oldest first, revoked ones included: never a key or its hash. A table on a terminal, the admin API's JSON otherwise (or with --json)."},
	"keys revoke":        {"[flags] ID", "Revoke an API key by its ID (see keys list). Servers on this database refuse it within 2 s (they cache the keys they resolved that long)."},
	"tenants list":       {"[flags]", "List tenants with their in-flight limit, weight and tasks in flight. A table on a terminal, the admin API's JSON otherwise (or with --json)."},
	"tenants set-limits": {"--tenant T [--max-in-flight N] [--weight W] [flags]", "Change a tenant's in-flight limit and dispatch weight: only the flags given change. A missing tenant is created with --default-tenant-limit."},
	"rules publish":      {"[flags] FILE", "Validate a quality rule set and publish it as the next version."},
	"rules list":         {"[flags]", "List the published rule set versions."},
	"submit":             {"--workflow W [flags]", "Submit a task and print it (with --wait, once it has finished)."},
	"get":                {"[flags] ID", "Show a task; with --wait, wait for it to finish first."},
	"cancel":             {"[flags] ID", "Cancel a queued or running task and show it."},
	"retry":              {"[flags] ID", "Queue a failed, timed-out or cancelled task again (same ID, input and idempotency key, its attempts renewed) and show it."},
	"list":               {"[flags]", "List your tenant's tasks, newest first: a table on a terminal, the API's JSON otherwise (or with --json)."},
	"events":             {"[flags] ID", "Show a task's history."},
	"evidence":           {"[flags] ID", "Show the evidence a task's workflow recorded."},
	"bench":              {"[flags]", "Measure throughput and latency: a store in-process (--db), or a running server over HTTP (--url)."},
	"faultcheck":         {"--db PATH|URL [--scenario S] [--duration D] [flags]", "Run servers of this binary under a recorded load while injecting faults (kill -9, PostgreSQL restarts, connection resets, ambiguous commits, frozen nodes, clock skew, rolling restarts with SIGTERM), drain, then check the history against the database: nothing acknowledged lost, no duplicate, no terminal state overwritten, admission within limits, executions within attempts, no outcome lost or attempt charged by a graceful stop. Exits 1 on any anomaly. Use a scratch database."},
	"version":            {"", "Print the version of this binary."},
}

// hiddenFlags are flags for Docket's own tools (serve's --clock-offset and
// --faultcheck-probe, set by `docket faultcheck`): left out of --help and
// read from the command line only.
var hiddenFlags = []string{"clock-offset", "faultcheck-probe"}

// newFlags returns a flag set for one command ("serve", "keys create", …).
// Parse it with parse.
func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("docket "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {} // parse prints the help or a hint itself
	return fs
}

// parse parses args (flags may come before or after positional arguments,
// which it returns), then fills every flag not given on the command line
// from its environment variable (DOCKET_ + the flag name in upper snake
// case), so that --lease-ttl reads DOCKET_LEASE_TTL. -h and --help return a
// *helpError with the command's help.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	positional, _, err := parseArgs(fs, args)
	return positional, err
}

// parseArgs is parse that also returns the flags given on the command line,
// and reads no environment variable for the flags named in noEnv (their
// help says so).
func parseArgs(fs *flag.FlagSet, args []string, noEnv ...string) (positional []string, given map[string]bool, err error) {
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, nil, &helpError{text: helpText(fs, noEnv)}
			}
			fmt.Fprintf(fs.Output(), "Run '%s --help' for its flags.\n", fs.Name())
			return nil, nil, errUsage
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
	given = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	fs.VisitAll(func(f *flag.Flag) {
		if given[f.Name] || err != nil || slices.Contains(noEnv, f.Name) {
			return
		}
		env := envName(f.Name)
		if v, ok := os.LookupEnv(env); ok {
			if serr := fs.Set(f.Name, v); serr != nil {
				err = fmt.Errorf("%s=%q: %v", env, v, serr)
			}
		}
	})
	return positional, given, err
}

// isSet reports whether flag name was set, on the command line or by its
// environment variable (after parse).
func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// helpText renders a command's help: usage, summary, and each flag with
// its environment variable (none for the flags in noEnv) and default.
func helpText(fs *flag.FlagSet, noEnv []string) string {
	var b strings.Builder
	name := strings.TrimPrefix(fs.Name(), "docket ")
	h, ok := commandHelp[name]
	if !ok {
		h.args = "[flags]"
	}
	fmt.Fprintf(&b, "usage: %s\n", strings.TrimSpace("docket "+name+" "+h.args))
	if h.summary != "" {
		fmt.Fprintf(&b, "\n%s\n", h.summary)
	}
	b.WriteString("\nflags (each also read from the environment variable shown):\n")
	fs.VisitAll(func(f *flag.Flag) {
		if slices.Contains(hiddenFlags, f.Name) {
			return
		}
		typ, usage := flag.UnquoteUsage(f)
		if t, ok := f.Value.(interface{ Type() string }); ok && typ == "value" {
			typ = t.Type()
		}
		fmt.Fprintf(&b, "  --%s", f.Name)
		if typ != "" {
			fmt.Fprintf(&b, " %s", typ)
		}
		if slices.Contains(noEnv, f.Name) {
			fmt.Fprintf(&b, "   (command line only)\n        %s", usage)
		} else {
			fmt.Fprintf(&b, "   $%s\n        %s", envName(f.Name), usage)
		}
		if f.DefValue != "" && f.DefValue != "0" && f.DefValue != "false" && f.DefValue != "0s" {
			if typ == "string" {
				fmt.Fprintf(&b, " (default %q)", f.DefValue)
			} else {
				fmt.Fprintf(&b, " (default %s)", f.DefValue)
			}
		}
		b.WriteString("\n")
	})
	return b.String()
}

// envAliases names the variables that do not follow the flag name.
var envAliases = map[string]string{"key": "DOCKET_API_KEY"}

func envName(flagName string) string {
	if env, ok := envAliases[flagName]; ok {
		return env
	}
	return "DOCKET_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// dbFlag is the --db flag every database command takes.
func dbFlag(fs *flag.FlagSet) *string {
	return fs.String("db", defaults.DB, "SQLite file path, or a postgres:// URL")
}

// durationFlag defines a duration flag whose error says what a bare number
// lacks ("10" needs a unit).
func durationFlag(fs *flag.FlagSet, name string, value time.Duration, usage string) *time.Duration {
	d := new(time.Duration)
	durationVar(fs, d, name, value, usage)
	return d
}

// durationVar is durationFlag storing into d.
func durationVar(fs *flag.FlagSet, d *time.Duration, name string, value time.Duration, usage string) {
	*d = value
	fs.Var(&durationValue{d: d}, name, usage)
}

// unlimitedDurationVar is durationVar for a setting that can be unlimited:
// it also takes -1 (defaults.Unlimited), and any negative duration means
// the same.
func unlimitedDurationVar(fs *flag.FlagSet, d *time.Duration, name string, value time.Duration, usage string) {
	*d = value
	fs.Var(&durationValue{d: d, unlimited: true}, name, usage)
}

// durationValue is a flag.Value for a time.Duration.
type durationValue struct {
	d         *time.Duration
	unlimited bool // -1 is defaults.Unlimited
}

func (v *durationValue) Set(s string) error {
	if v.unlimited && s == strconv.Itoa(defaults.Unlimited) {
		*v.d = defaults.Unlimited
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		if _, nerr := strconv.ParseFloat(s, 64); nerr == nil {
			return fmt.Errorf("needs a unit, e.g. %ss", s)
		}
		return errors.New("not a duration: a number with a unit, e.g. 10s, 500ms, 2m")
	}
	*v.d = d
	return nil
}

func (v *durationValue) String() string {
	if v.d == nil {
		return "0s"
	}
	if v.unlimited && *v.d < 0 {
		return strconv.Itoa(defaults.Unlimited)
	}
	// 1m and 168h rather than 1m0s and 168h0m0s: the README's spelling.
	out := v.d.String()
	if trimmed, ok := strings.CutSuffix(out, "m0s"); ok {
		out = trimmed + "m"
	}
	if trimmed, ok := strings.CutSuffix(out, "h0m"); ok {
		out = trimmed + "h"
	}
	return out
}

// Type names the value in --help.
func (v *durationValue) Type() string { return "duration" }
