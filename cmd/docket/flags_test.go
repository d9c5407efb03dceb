package main

import (
	"bytes"
	"flag"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/docket-dev/docket/internal/defaults"
	"github.com/docket-dev/docket/internal/httpapi/httpapitest"
)

// The configuration page's table (docs/configuration.md), with the table of docs/operations.md
// ("Memory and connection bounds"), gives every serve flag (but the hidden
// ones) and, for each flag with a fixed default, the default serve uses:
// the defaults table, which is also what --help shows.
func TestDocsConfigurationMatchesServeFlags(t *testing.T) {
	readmeDefault := map[string]string{}
	for _, doc := range []struct{ file, start, end string }{
		{"../../docs/configuration.md", "\n| flag |", "\nAdmin commands take"},
		{"../../docs/operations.md", "\n## Memory and connection bounds\n", "\n## "},
	} {
		text, err := os.ReadFile(doc.file)
		if err != nil {
			t.Fatal(err)
		}
		section := string(text)
		start := strings.Index(section, doc.start)
		if start < 0 {
			t.Fatalf("%s has no section %q", doc.file, strings.TrimSpace(doc.start))
		}
		section = section[start+len(doc.start):]
		if end := strings.Index(section, doc.end); end >= 0 {
			section = section[:end]
		}
		configurationTable(section, readmeDefault)
	}

	fs := newFlags("serve", &bytes.Buffer{})
	serveFlags(fs)
	fs.VisitAll(func(f *flag.Flag) {
		want, ok := readmeDefault[f.Name]
		if !ok {
			t.Errorf("the configuration tables lacks --%s", f.Name)
			return
		}
		if f.DefValue == "0" || f.DefValue == "0s" {
			return // computed (per CPU, from the lease TTL): the docs say how
		}
		if !sameDefault(f.DefValue, want) {
			t.Errorf("--%s: documented default %q, serve's %q", f.Name, want, f.DefValue)
		}
	})
	for name := range readmeDefault {
		if fs.Lookup(name) == nil {
			t.Errorf("the configuration tables names --%s, which serve does not have", name)
		}
	}
}

// configurationTable adds the flags of the configuration table rows in
// section (| `--flag`, `--other` | meaning | default, default |) and their
// defaults to defaults.
func configurationTable(section string, defaults map[string]string) {
	flagName := regexp.MustCompile("`(--[a-z-]+)`")
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), " | ")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if len(cells) != 3 || !strings.HasPrefix(cells[0], "`--") {
			continue
		}
		names := flagName.FindAllStringSubmatch(cells[0], -1)
		values := strings.Split(cells[2], ", ")
		for i, n := range names {
			v := values[0]
			if len(values) == len(names) {
				v = values[i]
			}
			defaults[strings.TrimPrefix(n[1], "--")] = strings.Trim(v, "`")
		}
	}
}

// sameDefault compares a flag's default with the docs' spelling of it.
func sameDefault(flagValue, readme string) bool {
	if flagValue == readme {
		return true
	}
	a, errA := time.ParseDuration(flagValue)
	b, errB := time.ParseDuration(readme)
	return errA == nil && errB == nil && a == b
}

// -1 is Unlimited in serve's limit flags and in --retention, on the
// command line and in the environment; 0 keeps meaning the default.
func TestServeFlagsTakeUnlimited(t *testing.T) {
	t.Setenv("DOCKET_MAX_WAITS_PER_TENANT", "-1")
	fs := newFlags("serve", &bytes.Buffer{})
	cfg := serveFlags(fs)
	_, err := parse(fs, []string{"--retention", "-1", "--default-tenant-limit", "-1", "--max-waits", "-1",
		"--online-capacity", "-1", "--offline-workers", "-1", "--lease-ttl", "0s"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Retention != defaults.Unlimited || cfg.DefaultTenantLimit != defaults.Unlimited || cfg.MaxWaits != defaults.Unlimited ||
		cfg.MaxWaitsPerTenant != defaults.Unlimited || cfg.OnlineCapacity != defaults.Unlimited || cfg.OfflineWorkers != defaults.NoWorkers {
		t.Errorf("config %+v: want Unlimited and NoWorkers where -1 was given", cfg)
	}
	if cfg.LeaseTTL != 0 {
		t.Errorf("--lease-ttl 0s = %s, want 0 (the default, filled by the queue)", cfg.LeaseTTL)
	}
	for _, v := range []string{"-1s", "-1h"} { // any negative retention keeps tasks
		fs := newFlags("serve", &bytes.Buffer{})
		cfg := serveFlags(fs)
		if _, err := parse(fs, []string{"--retention", v}); err != nil || cfg.Retention >= 0 {
			t.Errorf("--retention %s: %v, %s; want a negative (Unlimited) retention", v, err, cfg.Retention)
		}
	}
}

// A duration without a unit says that it needs one, whether it comes from
// the command line or the environment.
func TestDurationNeedsAUnit(t *testing.T) {
	code, _, errOut := runCLI(t, "get", "--wait", "10", "some-id", "--key", "k")
	if code != 2 || !strings.Contains(errOut, `invalid value "10" for flag -wait: needs a unit, e.g. 10s`) {
		t.Errorf("get --wait 10: exit %d, stderr %q; want a usage error that asks for a unit", code, errOut)
	}
	t.Setenv("DOCKET_LEASE_TTL", "30")
	code, _, errOut = runCLI(t, "serve", "--listen", "127.0.0.1:0")
	if code != 1 || !strings.Contains(errOut, `DOCKET_LEASE_TTL="30": needs a unit, e.g. 30s`) {
		t.Errorf("DOCKET_LEASE_TTL=30: exit %d, stderr %q; want an error that asks for a unit", code, errOut)
	}
	code, _, errOut = runCLI(t, "get", "--wait", "soon", "some-id")
	if code != 2 || !strings.Contains(errOut, "not a duration") {
		t.Errorf("get --wait soon: exit %d, stderr %q", code, errOut)
	}
}

// The help of bench and faultcheck names no environment variable for the
// flags they read from the command line only, and says so instead.
func TestHelpNamesOnlyTheVariablesRead(t *testing.T) {
	for cmd, cmdLineOnly := range map[string][]string{"bench": {"db", "url", "mode"}, "faultcheck": {"db"}} {
		code, out, _ := runCLI(t, cmd, "--help")
		if code != 0 {
			t.Fatalf("%s --help: exit %d", cmd, code)
		}
		for _, f := range cmdLineOnly {
			if strings.Contains(out, "$"+envName(f)+"\n") {
				t.Errorf("%s --help lists $%s, which %s does not read", cmd, envName(f), cmd)
			}
			if !regexp.MustCompile(`--` + f + ` string   \(command line only\)`).MatchString(out) {
				t.Errorf("%s --help does not say that --%s is read from the command line only:\n%s", cmd, f, out)
			}
		}
	}
	code, out, _ := runCLI(t, "serve", "--help")
	if code != 0 || strings.Contains(out, "command line only") || !strings.Contains(out, "$DOCKET_DB") {
		t.Errorf("serve --help: every flag reads its variable:\n%s", out)
	}
}

// DOCKET_N is -n, for the bench of a running server too.
func TestBenchOfARunningServerReadsDocketN(t *testing.T) {
	s := httpapitest.New(t, httpapitest.Options{})
	t.Setenv("DOCKET_N", "3")
	code, out, errOut := runCLI(t, "bench", "--url", s.URL, "--key", s.Key, "--concurrency", "2", "--json")
	if code != 0 || !strings.Contains(out, `"tasks":3,`) {
		t.Fatalf("bench --url with DOCKET_N=3: exit %d, %s %s; want 3 tasks", code, out, errOut)
	}
}

// serve's flags for docket faultcheck stay out of its help.
func TestHiddenFlagsStayHidden(t *testing.T) {
	code, out, _ := runCLI(t, "serve", "--help")
	for _, f := range hiddenFlags {
		if code != 0 || strings.Contains(out, "--"+f) {
			t.Errorf("serve --help shows the hidden --%s", f)
		}
	}
}

// The admin commands that create tenants read --default-tenant-limit as
// serve does: 0 is the default, -1 unlimited.
func TestAdminDefaultTenantLimit(t *testing.T) {
	db := t.TempDir() + "/docket.db"
	if code, _, errOut := runCLI(t, "migrate", "--db", db); code != 0 {
		t.Fatalf("migrate: %s", errOut)
	}
	for _, tt := range []struct {
		tenant, limit string
		want          int
	}{{"zero", "0", defaults.TenantLimit}, {"none", "-1", 0}, {"five", "5", 5}} {
		code, _, errOut := runCLI(t, "keys", "create", "--db", db, "--tenant", tt.tenant, "--principal", "p", "--default-tenant-limit", tt.limit)
		if code != 0 {
			t.Fatalf("keys create --default-tenant-limit %s: %s", tt.limit, errOut)
		}
		if got := tenant(t, db, tt.tenant).MaxInFlight; got != tt.want {
			t.Errorf("--default-tenant-limit %s: tenant limit %d, want %d (0: unlimited, as stored)", tt.limit, got, tt.want)
		}
	}
	code, out, errOut := runCLI(t, "tenants", "set-limits", "--db", db, "--tenant", "five", "--max-in-flight", "-1")
	if code != 0 || out != "tenant five: max in flight unlimited, weight 1\n" {
		t.Errorf("set-limits --max-in-flight -1: exit %d, %q %s", code, out, errOut)
	}
}

// serve sets the Go runtime's soft memory limit from --max-body-memory
// (1 GiB for the default), unless GOMEMLIMIT sets one or the budget is
// lifted.
func TestServeMemoryLimit(t *testing.T) {
	for _, tc := range []struct {
		budget int64
		env    string
		want   int64
		ok     bool
	}{
		{defaults.MaxBodyMemory, "", 1 << 30, true},
		{0, "", 1 << 30, true},
		{64 << 20, "", 3*64<<20 + 256<<20, true},
		{defaults.Unlimited, "", 0, false},
		{defaults.MaxBodyMemory, "2GiB", 0, false},
	} {
		if got, ok := defaults.SoftMemoryLimit(tc.budget, tc.env); got != tc.want || ok != tc.ok {
			t.Errorf("SoftMemoryLimit(%d, %q) = %d, %v; want %d, %v", tc.budget, tc.env, got, ok, tc.want, tc.ok)
		}
	}
}

// Under a soft memory limit serve sets the collector's target to
// defaults.GCPercent, unless GOGC names one; without a limit it leaves
// Go's default.
func TestServeGCPercent(t *testing.T) {
	for _, tc := range []struct {
		limited bool
		gogc    string
		want    int
		ok      bool
	}{
		{true, "", defaults.GCPercent, true},
		{true, "100", 0, false},
		{true, "off", 0, false},
		{false, "", 0, false},
	} {
		if got, ok := defaults.GCTarget(tc.limited, tc.gogc); got != tc.want || ok != tc.ok {
			t.Errorf("GCTarget(%v, %q) = %d, %v; want %d, %v", tc.limited, tc.gogc, got, ok, tc.want, tc.ok)
		}
	}
}
