//go:build unix

package faultcheck

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jonboulle/clockwork"
)

// pgCluster is a local PostgreSQL cluster the checker can stop and start
// with Debian's pg_ctlcluster.
type pgCluster struct {
	version, name string
	url           string          // to wait for the server to accept connections
	clock         clockwork.Clock // times the wait for a restarted cluster
}

// findPGCluster finds the cluster serving dbURL, or says why the checker
// cannot stop and start it.
func findPGCluster(dbURL string) (*pgCluster, string) {
	if os.Geteuid() != 0 {
		return nil, "stopping PostgreSQL needs root (pg_ctlcluster); run as root, or skip this scenario"
	}
	ctl, err := exec.LookPath("pg_ctlcluster")
	if err != nil {
		return nil, "pg_ctlcluster is not installed (Debian's postgresql-common): the checker cannot stop and start the server"
	}
	_ = ctl
	host, port, ok := pgHostPort(dbURL)
	if !ok {
		return nil, "the --db URL does not name a host and port the checker can read"
	}
	if host != "" && host != "localhost" && !isLoopback(host) && !strings.HasPrefix(host, "/") {
		return nil, fmt.Sprintf("PostgreSQL at %s is not on this machine: the checker stops only a local cluster", host)
	}
	out, err := exec.Command("pg_lsclusters", "--no-header").Output()
	if err != nil {
		return nil, "pg_lsclusters failed: the checker cannot find the cluster to stop"
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 4 && f[2] == strconv.Itoa(port) {
			return &pgCluster{version: f[0], name: f[1], url: dbURL}, ""
		}
	}
	return nil, fmt.Sprintf("no local cluster listens on port %d (pg_lsclusters)", port)
}

func isLoopback(host string) bool {
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// pgHostPort reads the host and port of a postgres:// URL (port 5432 when
// none is given).
func pgHostPort(dbURL string) (string, int, bool) {
	u, err := url.Parse(dbURL)
	if err != nil {
		return "", 0, false
	}
	host, port := u.Hostname(), u.Port()
	if h := u.Query().Get("host"); host == "" && h != "" {
		host = h
	}
	if p := u.Query().Get("port"); port == "" && p != "" {
		port = p
	}
	if port == "" {
		port = "5432"
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		return "", 0, false
	}
	return host, n, true
}

// Stop stops the cluster at once: `pg_ctlcluster … stop -m immediate`,
// PostgreSQL's crash (no checkpoint; it recovers from its WAL on start).
func (c *pgCluster) Stop(ctx context.Context) error {
	return c.ctl(ctx, "stop", "-m", "immediate")
}

// Start starts the cluster and waits until it accepts connections.
func (c *pgCluster) Start(ctx context.Context) error {
	if err := c.ctl(ctx, "start"); err != nil && !c.accepts(ctx) {
		return err
	}
	deadline := c.clock.Now().Add(60 * time.Second)
	for !c.accepts(ctx) {
		if c.clock.Now().After(deadline) {
			return fmt.Errorf("PostgreSQL %s/%s does not accept connections 60 s after its start", c.version, c.name)
		}
		if err := sleep(ctx, c.clock, 200*time.Millisecond); err != nil {
			return err
		}
	}
	return nil
}

func (c *pgCluster) ctl(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, "pg_ctlcluster", append([]string{"--skip-systemctl-redirect", c.version, c.name}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("pg_ctlcluster %s %s %s: %v: %s", c.version, c.name, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// accepts reports whether the database answers a query.
func (c *pgCluster) accepts(ctx context.Context) bool {
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	conn, err := pgx.Connect(cctx, c.url)
	if err != nil {
		return false
	}
	defer conn.Close(cctx)
	return conn.Ping(cctx) == nil
}
