package main

import (
	"bufio"
	"context"
	"net/url"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/docket-dev/docket/internal/logtest"
	"github.com/docket-dev/docket/internal/store/postgres/pgtest"
)

// TestPostgresPasswordIsNeverPrinted runs migrate and serve against a real
// PostgreSQL database named by a URL with a password in both places a URL
// can hold one: what they print names the database with the password
// masked.
func TestPostgresPasswordIsNeverPrinted(t *testing.T) {
	base := pgtest.URL(t)
	schema := pgtest.Schema(t, base)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	_, err = conn.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize())
	conn.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(u.User.Username(), "s3cret-user") // the test server trusts local connections
	q := u.Query()
	q.Set("password", "s3cret-param")
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	db := u.String()

	code, out, errOut := runCLI(t, "migrate", "--db", db)
	if code != 0 || !strings.HasPrefix(out, "migrations applied to postgres://"+u.User.Username()+":xxxxx@") ||
		strings.Contains(out+errOut, "s3cret") {
		t.Fatalf("migrate: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}

	if testing.Short() {
		t.Skip("builds and runs the server binary")
	}
	cmd := exec.Command(buildDocket(t), "serve", "--db", db, "--listen", freeAddr(t))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &logtest.Buffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var printed []string
	timeout := time.After(60 * time.Second) // only turns a hang into a failure
wait:
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				break wait
			}
			printed = append(printed, line)
			if strings.HasPrefix(line, "Docket listening") {
				_ = cmd.Process.Signal(syscall.SIGTERM)
			}
		case <-timeout:
			_ = cmd.Process.Kill()
			t.Fatalf("serve did not start; stderr:\n%s", stderr.String())
		}
	}
	_ = cmd.Wait()
	all := strings.Join(printed, "\n") + stderr.String()
	if strings.Contains(all, "s3cret") {
		t.Fatalf("serve printed the password:\n%s", all)
	}
	if !strings.Contains(all, "database postgres://"+u.User.Username()+":xxxxx@") {
		t.Fatalf("serve did not name its database:\n%s", all)
	}
	logtest.Check(t, stderr.String())
}
