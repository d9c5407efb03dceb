package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
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

// parse parses args, then fills every flag not given on the command line
// from its environment variable (DOCKET_ + the flag name in upper snake
// case), so that --lease-ttl reads DOCKET_LEASE_TTL.
func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return errUsage
		}
		return errUsage
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if given[f.Name] || err != nil {
			return
		}
		env := envName(f.Name)
		if v, ok := os.LookupEnv(env); ok {
			if serr := fs.Set(f.Name, v); serr != nil {
				err = fmt.Errorf("%s=%q: %v", env, v, serr)
			}
		}
	})
	return err
}

func envName(flagName string) string {
	return "DOCKET_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// dbFlag is the --db flag every database command takes.
func dbFlag(fs *flag.FlagSet) *string {
	return fs.String("db", "./docket.db", "SQLite file path, or a postgres:// URL")
}
