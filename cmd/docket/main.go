// Command docket runs and administers Docket.
//
//	docket serve                      run API, pools and schedulers
//	docket migrate                    create the database, apply migrations
//	docket keys create --tenant T --principal P [--role admin]
//	docket keys list [--tenant T] | docket keys revoke ID
//	docket tenants list
//	docket tenants set-limits --tenant T [--max-in-flight N] [--weight W]
//	docket rules publish FILE | docket rules list
//	docket submit | get | cancel | list | events | evidence   (HTTP client commands)
//	docket bench --db PATH|URL --mode burn-down|continuous|http   (measure a store in-process)
//	docket faultcheck --db PATH|URL --scenario S --duration D     (inject faults, check the guarantees)
//	docket version
//
// Every flag can also be set with an environment variable: --lease-ttl is
// DOCKET_LEASE_TTL, --db is DOCKET_DB, and so on (`docket CMD --help` shows
// each one), except the few that --help marks as read from the command line
// only (bench's --db, --url and --mode, faultcheck's --db). A flag left at 0
// takes its default; -1 lifts a limit (docket.Unlimited).
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"

	"github.com/docket-dev/docket"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage: docket <command> [flags]

server:
  serve                 run the HTTP API, worker pools and schedulers
admin (work on the database directly; same --db as serve):
  migrate               create the database if missing, apply migrations
  keys create           create an API key (printed alone on stdout)
  keys list             list API keys (never the keys themselves)
  keys revoke ID        revoke an API key
  tenants list          list tenants with their limits and tasks in flight
  tenants set-limits    change a tenant's in-flight limit and weight
  rules publish FILE    validate and publish a quality rule set version
  rules list            list published rule set versions
client (talk to a running server; --url/DOCKET_URL, --key/DOCKET_API_KEY):
  submit                submit a task
  get ID                show a task (--wait to wait for it to finish)
  cancel ID             cancel a task
  retry ID              queue a failed, timed-out or cancelled task again
  bulk cancel|retry|delete --state S --workflow W ...
                        act on every task a filter matches, as a job;
                        also status ID, stop ID
  dead-letters          failed tasks grouped by workflow and error code
  list                  list tasks
  events ID             show a task's history
  evidence ID           show a task's evidence
  workflows register NAME --pool P
                        register a remote workflow (admin key); also list, remove NAME
  workers list          list the remote workers the nodes have seen (admin key)
  schedules put NAME --tenant T --workflow W --cron EXPR
                        create or replace a periodic schedule (admin key);
                        also list, get, pause, resume, delete NAME
  pause --pool P | --tenant T | --workflow W [--refuse-submissions]
                        stop starting its tasks on every node (admin key), and with
                        --refuse-submissions refuse its submissions; resume: start again
  limits --tenant T | --workflow W [--rate N|none] [--burst N] [--concurrency-per-key N|none]
                        set rate limits on starts and the concurrency per key (admin key)
measure:
  bench --db PATH|URL   measure a store in-process: --mode burn-down|continuous|http
  bench --url URL       measure a running server end to end
  faultcheck --db PATH|URL
                        inject faults under load and check the guarantees:
                        --scenario kill9|pg-restart|conn-reset|ambiguous-commit|pause|clock-skew|sigterm|schedules|flow|all
other:
  version               print the version
  help [COMMAND]        show this help, or a command's

Run 'docket help <command>' or 'docket <command> --help' for its flags.
`

// commands maps each command to its implementation.
var commands = map[string]func(args []string, stdout, stderr io.Writer) error{
	"serve":      serveCmd,
	"migrate":    migrateCmd,
	"keys":       keysCmd,
	"tenants":    tenantsCmd,
	"rules":      rulesCmd,
	"workflows":  workflowsCmd,
	"workers":    workersCmd,
	"schedules":  schedulesCmd,
	"pause":      pauseCmd(true),
	"resume":     pauseCmd(false),
	"limits":     limitsCmd,
	"submit":     submitCmd,
	"get":        getCmd,
	"cancel":     cancelCmd,
	"list":       listCmd,
	"events":     eventsCmd,
	"evidence":   evidenceCmd,
	"bench":      benchCmd,
	"faultcheck": faultcheckCmd,
	// Hidden: a remote worker process of faultcheck's remote scenario.
	"faultcheck-worker": faultcheckWorkerCmd,
	"version":           versionCmd,
	"retry":             retryCmd,
	"bulk":              bulkCmd,
	"dead-letters":      deadLettersCmd,
}

// run executes one command and returns the process exit code: 0, 1 when
// the command failed, 2 for a usage error.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	name, rest := args[0], args[1:]
	switch name {
	case "help", "-h", "--help":
		if len(rest) == 0 {
			fmt.Fprint(stdout, usage)
			return 0
		}
		// docket help serve → docket serve --help
		return run(append(append([]string{}, rest...), "--help"), stdout, stderr)
	}
	cmd, ok := commands[name]
	if !ok {
		fmt.Fprintf(stderr, "docket: unknown command %q\n\n%s", name, usage)
		return 2
	}
	err := cmd(rest, stdout, stderr)
	var help *helpError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &help):
		fmt.Fprint(stdout, help.text)
		return 0
	case errors.Is(err, errUsage):
		return 2
	}
	// Errors of the client package start with "docket: " already.
	fmt.Fprintf(stderr, "docket %s: %s\n", name, strings.TrimPrefix(err.Error(), "docket: "))
	return 1
}

// groupHelp answers the help of a command with subcommands (keys, tenants,
// rules): asked for, it is a *helpError; otherwise the usage goes to stderr
// and the answer is errUsage.
func groupHelp(args []string, text string, stderr io.Writer) error {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
		return &helpError{text: text}
	}
	fmt.Fprint(stderr, text)
	return errUsage
}

func versionCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("version", stderr)
	if _, err := parse(fs, args); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "docket %s (%s, %s/%s)\n", docket.Version(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return nil
}
