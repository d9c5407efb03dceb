package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/docket-dev/docket"
	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/auth"
	"github.com/docket-dev/docket/internal/quality"
	"github.com/docket-dev/docket/internal/store"
)

func migrateCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("migrate", stderr)
	db := dbFlag(fs)
	if _, err := parse(fs, args); err != nil {
		return err
	}
	st, err := docket.OpenStore(context.Background(), *db, docket.StoreOptions{})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "migrations applied to %s\n", *db)
	return st.Close()
}

func keysCmd(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "create" {
		fmt.Fprintln(stderr, "usage: docket keys create --tenant T --principal P [--role member|admin]")
		return errUsage
	}
	fs := newFlags("keys create", stderr)
	db := dbFlag(fs)
	tenant := fs.String("tenant", "", "tenant the key belongs to (created if missing)")
	principal := fs.String("principal", "", "principal: the author of tasks submitted with the key")
	role := fs.String("role", "member", "member or admin")
	if _, err := parse(fs, args[1:]); err != nil {
		return err
	}
	if *tenant == "" || *principal == "" {
		return errors.New("--tenant and --principal are required")
	}
	st, err := docket.OpenStore(context.Background(), *db, docket.StoreOptions{})
	if err != nil {
		return err
	}
	defer st.Close()
	key, _, err := auth.CreateKey(context.Background(), st, time.Now(), *tenant, *principal, dockettype.Role(*role))
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, key)
	return nil
}

func tenantsCmd(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "set-limits" {
		fmt.Fprintln(stderr, "usage: docket tenants set-limits --tenant T --max-in-flight N [--weight W]")
		return errUsage
	}
	fs := newFlags("tenants set-limits", stderr)
	db := dbFlag(fs)
	tenant := fs.String("tenant", "", "tenant to configure (created if missing)")
	maxInFlight := fs.Int("max-in-flight", 0, "most non-terminal tasks of the tenant (0: unlimited); unchanged when not given")
	weight := fs.Int("weight", 1, "dispatch weight relative to other tenants (>= 1); unchanged when not given")
	if _, err := parse(fs, args[1:]); err != nil {
		return err
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if !auth.ValidName(*tenant) {
		return errors.New("--tenant is required: 1-64 characters of [A-Za-z0-9._@-]")
	}
	if *maxInFlight < 0 || *weight < 1 {
		return errors.New("--max-in-flight must be >= 0 and --weight >= 1")
	}
	st, err := docket.OpenStore(context.Background(), *db, docket.StoreOptions{})
	if err != nil {
		return err
	}
	defer st.Close()
	p := &store.UpdateTenantParams{Now: time.Now(), Tenant: *tenant}
	if given["max-in-flight"] {
		p.MaxInFlight = maxInFlight
	}
	if given["weight"] {
		p.Weight = weight
	}
	ten, err := st.UpdateTenant(context.Background(), p)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "tenant %s: max in flight %d, weight %d\n", ten.ID, ten.MaxInFlight, ten.Weight)
	return nil
}

func rulesCmd(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || (args[0] != "publish" && args[0] != "list") {
		fmt.Fprintln(stderr, "usage: docket rules publish FILE | docket rules list")
		return errUsage
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
			return errors.New("usage: docket rules publish FILE")
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
		st, err := docket.OpenStore(ctx, *db, docket.StoreOptions{})
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
	st, err := docket.OpenStore(ctx, *db, docket.StoreOptions{})
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
