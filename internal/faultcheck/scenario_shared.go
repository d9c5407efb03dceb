//go:build unix

package faultcheck

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	mrand "math/rand/v2"
	"strings"
	"time"

	"github.com/docket-dev/docket/client"
	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// The parts that several scenarios share: a tenant of their own, the
// fault loop that kills servers and stops PostgreSQL, and reading back a
// tenant's tasks once they have ended.

// ownTenant creates a tenant for the scenario's own tasks, named prefix
// and a random suffix, without an in-flight limit, and a key for it of
// role ("" for member); it returns the tenant and a client of each node.
func (r *rig) ownTenant(ctx context.Context, prefix, role string) (string, []*client.Client, error) {
	var suffix [3]byte
	_, _ = rand.Read(suffix[:])
	tenant := prefix + hex.EncodeToString(suffix[:])
	args := []string{"keys", "create", "--db", r.opts.DB, "--tenant", tenant, "--principal", "faultcheck"}
	if role != "" {
		args = append(args, "--role", role)
	}
	key, err := r.admin(ctx, append(args, "--default-tenant-limit", "0")...)
	if err != nil {
		return "", nil, err
	}
	var clients []*client.Client
	for _, n := range r.nodes {
		clients = append(clients, client.New("http://"+n.Addr, strings.TrimSpace(key)))
	}
	return tenant, clients, nil
}

// pgStops is embedded by the scenarios that may stop PostgreSQL (pg is
// nil where they cannot): it heals by starting it again, and never leaves
// it stopped.
type pgStops struct {
	pg *pgCluster
}

// findPG sets pg to the cluster that serves the run's database, when the
// faultcheck can stop and start it.
func (s *pgStops) findPG(r *rig) {
	if pg, _ := findPGCluster(r.opts.DB); pg != nil {
		pg.clock = r.opts.Clock
		s.pg = pg
		r.note("every fourth fault stops PostgreSQL for 1-3 s")
	}
}

// Heal starts PostgreSQL if it is down; it runs even when the run was
// interrupted, so PostgreSQL is never left stopped.
func (s *pgStops) Heal(r *rig) error {
	if s.pg == nil || s.pg.accepts(context.Background()) {
		return nil
	}
	if err := s.pg.Start(context.Background()); err != nil {
		return err
	}
	r.hist.Fault(FaultPGStart)
	return nil
}

// Close leaves PostgreSQL running, whatever happened before.
func (s *pgStops) Close(*rig) {
	if s.pg != nil && !s.pg.accepts(context.Background()) {
		_ = s.pg.Start(context.Background())
	}
}

// killsAndStops injects faults until ctx ends: every 1–4 s a random
// server is killed with SIGKILL and started again 0–1 s later, or, every
// fourth fault where pg is set, PostgreSQL is stopped for 1–3 s.
func (r *rig) killsAndStops(ctx context.Context, rng *mrand.Rand, pg *pgCluster) error {
	for n := 1; ; n++ {
		if r.sleepBetween(ctx, rng, time.Second, 4*time.Second) != nil {
			return nil
		}
		var err error
		if pg != nil && n%4 == 0 {
			err = r.stopPG(rng, pg)
		} else {
			err = r.killOne(rng)
		}
		if err != nil {
			return err
		}
	}
}

// killOne kills a random server with SIGKILL and starts it again 0–1 s
// later.
func (r *rig) killOne(rng *mrand.Rand) error {
	node := r.nodes[rng.IntN(len(r.nodes))]
	r.hist.Fault(FaultKill + " " + node.Name)
	if err := node.Kill(); err != nil {
		return err
	}
	_ = r.sleepBetween(context.Background(), rng, 0, time.Second)
	if err := node.Start(context.Background()); err != nil {
		return err
	}
	r.hist.Fault(FaultStart + " " + node.Name)
	return nil
}

// stopPG stops PostgreSQL for 1–3 s.
func (r *rig) stopPG(rng *mrand.Rand, pg *pgCluster) error {
	r.hist.Fault(FaultPGStop)
	if err := pg.Stop(context.Background()); err != nil {
		return err
	}
	_ = r.sleepBetween(context.Background(), rng, time.Second, 3*time.Second)
	if err := pg.Start(context.Background()); err != nil {
		return err
	}
	r.hist.Fault(FaultPGStart)
	return nil
}

// tenantTasks lists every task of tenant, page by page.
func tenantTasks(ctx context.Context, st store.Store, tenant string) ([]*dockettype.Task, error) {
	var tasks []*dockettype.Task
	for after := ""; ; {
		lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		page, err := st.ListTasks(lctx, &store.ListTasksParams{Tenant: tenant, Limit: 500, After: after})
		cancel()
		if err != nil {
			return nil, err
		}
		tasks = append(tasks, page...)
		if len(page) < 500 {
			return tasks, nil
		}
		after = page[len(page)-1].ID
	}
}

// endedTasks waits, polling every `every`, until every task of tenant is
// terminal or give passes, and returns them with how many were still
// live.
func (r *rig) endedTasks(ctx context.Context, st store.Store, tenant string, give time.Time, every time.Duration) ([]*dockettype.Task, int, error) {
	for {
		tasks, err := tenantTasks(ctx, st, tenant)
		if err != nil {
			return nil, 0, fmt.Errorf("list the scenario's tasks: %w", err)
		}
		live := 0
		for _, t := range tasks {
			if !t.State.Terminal() {
				live++
			}
		}
		if live == 0 || r.opts.Clock.Now().After(give) {
			return tasks, live, nil
		}
		if err := sleep(ctx, r.opts.Clock, every); err != nil {
			return nil, 0, err
		}
	}
}
