package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// errUsage: the flag package already printed what was wrong.
var errUsage = errors.New("usage")

// newFlags returns a flag set for one command.
func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("docket "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// parse parses args (flags may come before or after positional
// arguments, which it returns), then fills every flag not given on the
// command line from its environment variable (DOCKET_ + the flag name in
// upper snake case), so that --lease-ttl reads DOCKET_LEASE_TTL.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	positional, _, err := parseArgs(fs, args)
	return positional, err
}

// parseArgs is parse that also returns the flags given on the command line,
// and reads no environment variable for the flags named in noEnv.
func parseArgs(fs *flag.FlagSet, args []string, noEnv ...string) (positional []string, given map[string]bool, err error) {
	for {
		if err := fs.Parse(args); err != nil {
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
	return fs.String("db", "./docket.db", "SQLite file path, or a postgres:// URL")
}
