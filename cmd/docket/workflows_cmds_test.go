package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// An admin registers, lists and removes a remote workflow through the CLI;
// the server refuses a built-in name and a member key.
func TestWorkflowsCommands(t *testing.T) {
	s := stack(t)
	admin := s.NewAdminKeyFor(t, "ops", "root")
	code, out, errOut := runCLI(t, "workflows", "register", "images.resize", "--pool", "offline", "--max-attempts", "4",
		"--url", s.URL, "--key", admin)
	var wf workflowJSON
	if code != 0 || json.Unmarshal([]byte(out), &wf) != nil || wf.Name != "images.resize" || wf.Pool != "offline" ||
		wf.MaxAttempts != 4 || !wf.Remote {
		t.Fatalf("register: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, _, errOut = runCLI(t, "workflows", "register", "demo.echo", "--pool", "online", "--url", s.URL, "--key", admin)
	if code != 1 || !strings.Contains(errOut, "builtin_workflow") {
		t.Errorf("register of a built-in name: exit %d, stderr %q; want 1 and builtin_workflow", code, errOut)
	}
	code, _, errOut = runCLI(t, "workflows", "register", "x.y", "--pool", "online", "--url", s.URL, "--key", s.Key)
	if code != 1 || !strings.Contains(errOut, "forbidden") {
		t.Errorf("register with a member key: exit %d, stderr %q; want 1 and forbidden", code, errOut)
	}
	code, out, _ = runCLI(t, "workflows", "list", "--url", s.URL, "--key", admin)
	var list struct{ Workflows []workflowJSON }
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil {
		t.Fatalf("list: exit %d, %q", code, out)
	}
	var remote, builtin int
	for _, w := range list.Workflows {
		if w.Remote {
			remote++
		} else {
			builtin++
		}
	}
	if remote != 1 || builtin == 0 {
		t.Errorf("list = %+v, want the built-in workflows and the one remote", list.Workflows)
	}
	if code, _, errOut = runCLI(t, "workflows", "remove", "images.resize", "--url", s.URL, "--key", admin); code != 0 {
		t.Errorf("remove: exit %d, %q", code, errOut)
	}
	if code, _, errOut = runCLI(t, "workflows", "remove", "images.resize", "--url", s.URL, "--key", admin); code != 1 || !strings.Contains(errOut, "not_found") {
		t.Errorf("remove again: exit %d, %q; want 1 and not_found", code, errOut)
	}
	if code, _, errOut = runCLI(t, "workflows", "register", "--url", s.URL, "--key", admin); code != 1 || !strings.Contains(errOut, "usage") {
		t.Errorf("register without a name: exit %d, %q", code, errOut)
	}
	code, out, _ = runCLI(t, "workers", "list", "--url", s.URL, "--key", admin)
	if code != 0 || !strings.Contains(out, `"workers"`) {
		t.Errorf("workers list: exit %d, %q", code, out)
	}
}

// keys create --role worker makes a worker key; --all-tenants only with it.
func TestKeysCreateWorker(t *testing.T) {
	db := filepath.Join(t.TempDir(), "docket.db")
	if code, _, errOut := runCLI(t, "migrate", "--db", db); code != 0 {
		t.Fatal(errOut)
	}
	code, out, errOut := runCLI(t, "keys", "create", "--db", db, "--tenant", "acme", "--principal", "fleet", "--role", "worker", "--all-tenants")
	if code != 0 || !strings.HasPrefix(out, "dk_") {
		t.Fatalf("keys create --role worker: exit %d, %q, %q", code, out, errOut)
	}
	code, out, _ = runCLI(t, "keys", "list", "--db", db, "--json")
	if code != 0 || !strings.Contains(out, `"role": "worker"`) || !strings.Contains(out, `"all_tenants": true`) {
		t.Errorf("keys list: exit %d, %s", code, out)
	}
	code, _, errOut = runCLI(t, "keys", "create", "--db", db, "--tenant", "acme", "--principal", "p", "--all-tenants")
	if code != 1 || !strings.Contains(errOut, "--all-tenants is for worker keys") {
		t.Errorf("--all-tenants on a member key: exit %d, %q", code, errOut)
	}
}
