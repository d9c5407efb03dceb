//go:build unix

package faultcheck

import (
	"context"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"strings"
	"time"

	"github.com/docket-dev/docket/internal/dsn"
)

// ScenarioConnReset resets and stalls connections with a TCP proxy.
const ScenarioConnReset = "conn-reset"

// connReset puts a TCP proxy between the server and PostgreSQL (on SQLite,
// between the clients and the server) and, every 0.3–1.5 s, resets all its
// connections, or one, or stalls all traffic for 0.5 s to TTL + 1 s (then
// maybe resets): the cuts land in submits, claims, heartbeats and finishes
// alike.
type connReset struct {
	proxy *TCPProxy
}

func newConnReset() Scenario { return &connReset{} }

func (*connReset) Name() string { return ScenarioConnReset }

func (*connReset) Needs(db string) string {
	if !dsn.IsPostgres(db) {
		return ""
	}
	if host, _, ok := pgHostPort(db); !ok || host == "" || strings.HasPrefix(host, "/") {
		return "the --db URL names no TCP host and port to put a proxy in front of"
	}
	return ""
}

func (c *connReset) Setup(_ context.Context, r *rig) error {
	if !r.postgres {
		if err := r.addNode(nodeConfig{}); err != nil {
			return err
		}
		p, err := NewTCPProxy(r.nodes[0].Addr, r.opts.Clock)
		if err != nil {
			return err
		}
		c.proxy = p
		r.endpoints = []string{"http://" + p.Addr()}
		r.note("SQLite has no database connection to cut: the proxy sits between the clients and the server")
		return nil
	}
	host, port, _ := pgHostPort(r.opts.DB)
	p, err := NewTCPProxy(net.JoinHostPort(host, fmt.Sprint(port)), r.opts.Clock)
	if err != nil {
		return err
	}
	c.proxy = p
	db, err := withHostPort(r.opts.DB, p.Addr())
	if err != nil {
		return err
	}
	return r.addNode(nodeConfig{db: db})
}

func (c *connReset) Inject(ctx context.Context, r *rig, rng *mrand.Rand) error {
	ttl := r.opts.LeaseTTL
	for {
		if r.sleepBetween(ctx, rng, 300*time.Millisecond, 1500*time.Millisecond) != nil {
			return nil
		}
		switch x := rng.Float64(); {
		case x < 0.4:
			c.proxy.ResetAll()
			r.hist.Fault(FaultResetAll)
		case x < 0.7:
			c.proxy.ResetOne(rng.IntN(1 << 20))
			r.hist.Fault(FaultResetOne)
		default:
			d := randBetween(rng, 500*time.Millisecond, ttl+time.Second)
			c.proxy.Stall(d)
			r.hist.Fault(FaultStall)
			if sleep(ctx, r.opts.Clock, d) != nil {
				return nil
			}
			if rng.IntN(2) == 0 {
				c.proxy.ResetAll()
				r.hist.Fault(FaultResetAll)
			}
		}
	}
}

func (c *connReset) Heal(*rig) error {
	if c.proxy != nil {
		c.proxy.Heal()
	}
	return nil
}

func (c *connReset) Close(*rig) {
	if c.proxy != nil {
		c.proxy.Heal()
		_ = c.proxy.Close()
	}
}
