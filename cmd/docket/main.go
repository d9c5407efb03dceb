// Command docket runs and administers Docket.
//
//	docket serve                      run API, pools and schedulers
//	docket migrate                    apply database migrations
//	docket keys create --tenant T --principal P [--role admin]
//	docket tenants set-limits --tenant T --max-in-flight N [--weight W]
//	docket rules publish FILE | docket rules list
//	docket submit | get | cancel | list | events   (HTTP client commands)
//	docket bench --db PATH|URL --mode burn-down|continuous|http   (measure a store in-process)
//
// Every flag can also be set with an environment variable: --lease-ttl is
// DOCKET_LEASE_TTL, --db is DOCKET_DB, and so on.
package main

import (
	"fmt"
	"io"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage: docket <command> [flags]

server:
  serve                 run the HTTP API, worker pools and schedulers
admin (work on the database directly; same --db as serve):
  migrate               apply database migrations
  keys create           create an API key (printed alone on stdout)
  tenants set-limits    set a tenant's in-flight limit and weight
  rules publish FILE    validate and publish a quality rule set version
  rules list            list published rule set versions
client (talk to a running server; --url/DOCKET_URL, --key/DOCKET_API_KEY):
  submit                submit a task
  get ID                show a task (--wait to wait for it to finish)
  cancel ID             cancel a task
  list                  list tasks
  events ID             show a task's history
  evidence ID           show a task's evidence
measure:
  bench --db PATH|URL   measure a store in-process: --mode burn-down|continuous|http
  bench --url URL       measure a running server end to end

Run 'docket <command> -h' for the flags of a command.
`

// run executes one command and returns the process exit code.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	cmd, rest := args[0], args[1:]
	var err error
	switch cmd {
	case "serve":
		err = serveCmd(rest, stdout, stderr)
	case "migrate":
		err = migrateCmd(rest, stdout, stderr)
	case "keys":
		err = keysCmd(rest, stdout, stderr)
	case "tenants":
		err = tenantsCmd(rest, stdout, stderr)
	case "rules":
		err = rulesCmd(rest, stdout, stderr)
	case "submit":
		err = submitCmd(rest, stdout, stderr)
	case "get":
		err = getCmd(rest, stdout, stderr)
	case "cancel":
		err = cancelCmd(rest, stdout, stderr)
	case "list":
		err = listCmd(rest, stdout, stderr)
	case "events":
		err = eventsCmd(rest, stdout, stderr)
	case "evidence":
		err = evidenceCmd(rest, stdout, stderr)
	case "bench":
		err = benchCmd(rest, stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "docket: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
	if err != nil {
		if err == errUsage {
			return 2
		}
		fmt.Fprintf(stderr, "docket %s: %v\n", cmd, err)
		return 1
	}
	return 0
}
