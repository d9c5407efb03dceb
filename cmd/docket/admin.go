package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/auth"
	"github.com/docket-dev/docket/internal/defaults"
	"github.com/docket-dev/docket/internal/dsn"
	"github.com/docket-dev/docket/internal/node"
	"github.com/docket-dev/docket/internal/quality"
	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/store/storeopen"
	"github.com/docket-dev/docket/internal/tenantlimits"
)

func migrateCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("migrate", stderr)
	db := dbFlag(fs)
	if _, err := parse(fs, args); err != nil {
		return err
	}
	st, err := storeopen.Open(context.Background(), *db, storeopen.Options{})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "migrations applied to %s\n", dsn.Redact(*db))
	return st.Close()
}

// openExisting opens the database of an admin command. A SQLite file that
// does not exist is refused rather than created: a new empty database
// would hold a key or a rule set that no server reads.
func openExisting(ctx context.Context, db string) (store.Store, error) {
	if !dsn.IsPostgres(db) {
		if _, err := os.Stat(db); errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("no database at %s: check --db (only `docket serve` and `docket migrate` create one)", dsn.Redact(db))
		}
	}
	return storeopen.Open(ctx, db, storeopen.Options{})
}

// defaultTenantLimitUsage is the help of --default-tenant-limit, a flag of
// serve and of the admin commands that create tenants.
var defaultTenantLimitUsage = fmt.Sprintf("in-flight limit of a tenant created on first use (%d: unlimited); tenants that exist keep theirs", defaults.Unlimited)

// defaultTenantLimitFlag is --default-tenant-limit: the in-flight limit of
// a tenant created on first use (0: the default; defaults.Unlimited: none).
func defaultTenantLimitFlag(fs *flag.FlagSet) *int {
	return fs.Int("default-tenant-limit", defaults.TenantLimit, defaultTenantLimitUsage)
}

const keysUsage = `usage: docket keys create --tenant T --principal P [--role member|admin|worker] [--all-tenants] [flags]
       docket keys list [--tenant T] [flags]
       docket keys revoke [flags] ID

Run 'docket keys create --help' (or list, revoke) for its flags.
`

func keysCmd(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return groupHelp(args, keysUsage, stderr)
	}
	switch args[0] {
	case "create":
		return keysCreateCmd(args[1:], stdout, stderr)
	case "list":
		return keysListCmd(args[1:], stdout, stderr)
	case "revoke":
		return keysRevokeCmd(args[1:], stdout, stderr)
	}
	return groupHelp(args, keysUsage, stderr)
}

func keysCreateCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("keys create", stderr)
	db := dbFlag(fs)
	tenant := fs.String("tenant", "", "tenant the key belongs to (created if missing)")
	principal := fs.String("principal", "", "principal: the author of tasks submitted with the key")
	role := fs.String("role", "member", "member (its tenant's tasks), admin (also the admin API) or worker (remote workers: the worker API only)")
	allTenants := fs.Bool("all-tenants", false, "a worker key that serves every tenant's tasks (an operator's fleet); default: its own tenant's")
	defaultLimit := defaultTenantLimitFlag(fs)
	if _, err := parse(fs, args); err != nil {
		return err
	}
	if *tenant == "" || *principal == "" {
		return errors.New("--tenant and --principal are required")
	}
	ctx := context.Background()
	st, err := openExisting(ctx, *db)
	if err != nil {
		return err
	}
	defer st.Close()
	now := time.Now()
	if auth.ValidName(*tenant) {
		_, err := st.EnsureTenant(ctx, &store.EnsureTenantParams{Now: now, ID: *tenant, DefaultMaxInFlight: defaults.StoredTenantLimit(*defaultLimit)})
		if err != nil {
			return fmt.Errorf("create tenant: %w", err)
		}
	}
	var key string
	switch {
	case *allTenants && *role != string(dockettype.RoleWorker):
		return errors.New("--all-tenants is for worker keys (--role worker)")
	case *role == string(dockettype.RoleWorker):
		key, _, err = auth.CreateWorkerKey(ctx, st, now, *tenant, *principal, *allTenants)
	default:
		key, _, err = auth.CreateKey(ctx, st, now, *tenant, *principal, dockettype.Role(*role))
	}
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, key)
	return nil
}

// keyJSON is a key as GET /v1/admin/keys shows it: never the key, never
// its hash.
type keyJSON struct {
	ID         string          `json:"id"`
	Tenant     string          `json:"tenant"`
	Principal  string          `json:"principal"`
	Role       dockettype.Role `json:"role"`
	AllTenants bool            `json:"all_tenants"`
	CreatedAt  time.Time       `json:"created_at"`
	RevokedAt  *time.Time      `json:"revoked_at"`
}

func keyJSONOf(k *store.APIKey) keyJSON {
	return keyJSON{ID: k.ID, Tenant: k.Tenant, Principal: k.Principal, Role: k.Role, AllTenants: k.AllTenants,
		CreatedAt: k.CreatedAt, RevokedAt: k.RevokedAt}
}

// jsonFlag is --json: the admin API's JSON (shape) instead of human text
// (a table, a line), the default when stdout is not a terminal.
func jsonFlag(fs *flag.FlagSet, stdout io.Writer, shape, human string) *bool {
	return fs.Bool("json", !isTerminal(stdout), "print the admin API's JSON ("+shape+"); default: "+human+" on a terminal, JSON otherwise")
}

func keysListCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("keys list", stderr)
	db := dbFlag(fs)
	tenant := fs.String("tenant", "", "only this tenant's keys")
	asJSON := jsonFlag(fs, stdout, `{"keys":[…]}`, "a table")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	if *tenant != "" && !auth.ValidName(*tenant) {
		return errors.New("--tenant must be 1-64 characters of [A-Za-z0-9._@-]")
	}
	ctx := context.Background()
	st, err := openExisting(ctx, *db)
	if err != nil {
		return err
	}
	defer st.Close()
	keys, err := st.ListAPIKeys(ctx, *tenant)
	if err != nil {
		return err
	}
	out := struct {
		Keys []keyJSON `json:"keys"`
	}{Keys: make([]keyJSON, len(keys))}
	for i, k := range keys {
		out.Keys[i] = keyJSONOf(k)
	}
	if *asJSON {
		return printJSON(stdout, out)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tTENANT\tPRINCIPAL\tROLE\tCREATED\tREVOKED")
	for _, k := range out.Keys {
		revoked := "-"
		if k.RevokedAt != nil {
			revoked = k.RevokedAt.Local().Format(time.DateTime)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.Tenant, k.Principal, k.Role, k.CreatedAt.Local().Format(time.DateTime), revoked)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(out.Keys) == 0 {
		fmt.Fprintln(stdout, "(no keys)")
	}
	return nil
}

func keysRevokeCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("keys revoke", stderr)
	db := dbFlag(fs)
	asJSON := jsonFlag(fs, stdout, "the revoked key", "one line")
	ids, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(ids) != 1 {
		fmt.Fprint(stderr, keysUsage)
		return errUsage
	}
	ctx := context.Background()
	st, err := openExisting(ctx, *db)
	if err != nil {
		return err
	}
	defer st.Close()
	k, err := st.RevokeAPIKey(ctx, &store.RevokeAPIKeyParams{Now: time.Now(), ID: ids[0]})
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("no key %q: `docket keys list` shows the IDs", ids[0])
	}
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, keyJSONOf(k))
	}
	fmt.Fprintf(stdout, "key %s (%s/%s) revoked at %s; servers refuse it within %s\n",
		k.ID, k.Tenant, k.Principal, k.RevokedAt.Local().Format(time.DateTime), node.KeyCacheTTL)
	return nil
}

const tenantsUsage = `usage: docket tenants list [flags]
       docket tenants set-limits --tenant T [--max-in-flight N] [--weight W] [flags]

Run 'docket tenants list --help' or 'docket tenants set-limits --help' for their flags.
`

func tenantsCmd(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return groupHelp(args, tenantsUsage, stderr)
	}
	switch args[0] {
	case "list":
		return tenantsListCmd(args[1:], stdout, stderr)
	case "set-limits":
		return tenantsSetLimitsCmd(args[1:], stdout, stderr)
	}
	return groupHelp(args, tenantsUsage, stderr)
}

// tenantJSON is a tenant as GET /v1/admin/tenants shows it.
type tenantJSON struct {
	ID          string `json:"id"`
	MaxInFlight int    `json:"max_in_flight"`
	Weight      int    `json:"weight"`
	InFlight    int    `json:"in_flight"`
}

func tenantsListCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("tenants list", stderr)
	db := dbFlag(fs)
	asJSON := jsonFlag(fs, stdout, `{"tenants":[…]}`, "a table")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	ctx := context.Background()
	st, err := openExisting(ctx, *db)
	if err != nil {
		return err
	}
	defer st.Close()
	tenants, err := st.ListTenants(ctx)
	if err != nil {
		return err
	}
	out := struct {
		Tenants []tenantJSON `json:"tenants"`
	}{Tenants: make([]tenantJSON, len(tenants))}
	for i, t := range tenants {
		out.Tenants[i] = tenantJSON{ID: t.ID, MaxInFlight: t.MaxInFlight, Weight: t.Weight, InFlight: t.InFlight}
	}
	if *asJSON {
		return printJSON(stdout, out)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TENANT\tMAX IN FLIGHT\tWEIGHT\tIN FLIGHT")
	for _, t := range out.Tenants {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\n", t.ID, limitText(t.MaxInFlight), t.Weight, t.InFlight)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(out.Tenants) == 0 {
		fmt.Fprintln(stdout, "(no tenants)")
	}
	return nil
}

// limitText spells an in-flight limit, 0 being unlimited.
func limitText(n int) string {
	if n == 0 {
		return "unlimited"
	}
	return fmt.Sprint(n)
}

func tenantsSetLimitsCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("tenants set-limits", stderr)
	db := dbFlag(fs)
	tenant := fs.String("tenant", "", "tenant to configure (created if missing)")
	maxInFlight := fs.Int("max-in-flight", 0, fmt.Sprintf("most non-terminal tasks of the tenant (%d, or 0 as the API spells it: unlimited); unchanged when not given", defaults.Unlimited))
	weight := fs.Int("weight", 1, "dispatch weight relative to other tenants (>= 1); unchanged when not given")
	storageQuota := fs.String("storage-quota-bytes", "", fmt.Sprintf("the tenant's own storage quota in bytes (%d, or 0 as the API spells it: unlimited; \"default\": the server's); unchanged when not given", defaults.Unlimited))
	defaultLimit := defaultTenantLimitFlag(fs)
	if _, err := parse(fs, args); err != nil {
		return err
	}
	change := &tenantlimits.Change{Now: time.Now(), Tenant: *tenant, DefaultMaxInFlight: defaults.StoredTenantLimit(*defaultLimit)}
	var quotaErr error
	// Flags given on the command line or by their environment variable.
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "max-in-flight":
			if *maxInFlight == defaults.Unlimited {
				*maxInFlight = 0 // the store's and the API's unlimited
			}
			change.MaxInFlight = maxInFlight
		case "weight":
			change.Weight = weight
		case "storage-quota-bytes":
			change.StorageQuota, quotaErr = storageQuotaFlag(*storageQuota)
		}
	})
	if quotaErr != nil {
		return quotaErr
	}
	if err := change.Validate(); err != nil {
		return errors.New(messageOf(err))
	}
	ctx := context.Background()
	st, err := openExisting(ctx, *db)
	if err != nil {
		return err
	}
	defer st.Close()
	t, err := tenantlimits.Apply(ctx, st, change)
	if err != nil {
		return errors.New(messageOf(err))
	}
	fmt.Fprintf(stdout, "tenant %s: max in flight %s, weight %d", t.ID, limitText(t.MaxInFlight), t.Weight)
	if change.StorageQuota != nil {
		quota := "the server's default"
		if t.StorageQuota != nil {
			quota = limitText(int(*t.StorageQuota)) + " bytes"
			if *t.StorageQuota == 0 {
				quota = "unlimited"
			}
		}
		fmt.Fprintf(stdout, ", storage quota %s (%d bytes stored)", quota, t.StoredBytes)
	}
	fmt.Fprintln(stdout)
	return nil
}

// storageQuotaFlag reads --storage-quota-bytes: bytes, Unlimited (or 0)
// for unlimited, "default" for the server's default.
func storageQuotaFlag(v string) (*int64, error) {
	if v == "default" {
		q := store.NoStorageQuota
		return &q, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < defaults.Unlimited {
		return nil, fmt.Errorf("--storage-quota-bytes must be a number of bytes, %d (unlimited) or \"default\"", defaults.Unlimited)
	}
	n = max(n, 0) // the store's and the API's unlimited
	return &n, nil
}

const rulesUsage = `usage: docket rules publish [flags] FILE
       docket rules list [flags]

Run 'docket rules publish --help' or 'docket rules list --help' for their flags.
`

func rulesCmd(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || (args[0] != "publish" && args[0] != "list") {
		return groupHelp(args, rulesUsage, stderr)
	}
	fs := newFlags("rules "+args[0], stderr)
	db := dbFlag(fs)
	files, err := parse(fs, args[1:])
	if err != nil {
		return err
	}
	ctx := context.Background()
	if args[0] == "publish" {
		if len(files) != 1 {
			fmt.Fprint(stderr, rulesUsage)
			return errUsage
		}
		body, err := os.ReadFile(files[0])
		if err != nil {
			return err
		}
		// Validate before touching the database.
		if _, err := quality.Parse(body); err != nil {
			return fmt.Errorf("%s is not a valid rule set: %w", files[0], err)
		}
		hash, err := quality.Hash(body)
		if err != nil {
			return err
		}
		st, err := openExisting(ctx, *db)
		if err != nil {
			return err
		}
		defer st.Close()
		rs, err := st.PublishRuleSet(ctx, &store.PublishRuleSetParams{Now: time.Now(), Hash: hash, Body: body})
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "published %s (%s)\n", rs.Version, rs.Hash)
		return nil
	}
	st, err := openExisting(ctx, *db)
	if err != nil {
		return err
	}
	defer st.Close()
	sets, err := st.ListRuleSets(ctx)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "VERSION\tPUBLISHED\tHASH")
	fmt.Fprintf(tw, "%s\t(built in, demo mode)\t%s\n", quality.SeedVersion, quality.Seed().Hash())
	for _, rs := range sets {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", rs.Version, rs.PublishedAt.Format(time.RFC3339), rs.Hash)
	}
	return tw.Flush()
}

// messageOf is the message of a *dockettype.Error (its code is for
// programs), or the error's text.
func messageOf(err error) string {
	var de *dockettype.Error
	if errors.As(err, &de) {
		return de.Message
	}
	return err.Error()
}
