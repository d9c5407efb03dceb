package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// routeSet is "METHOD /path" for every route the handler serves with every
// option on (admin API and stats included).
func routeSet(t *testing.T) []string {
	t.Helper()
	type anyAdmin struct{ AdminStore }
	type anyNode struct{ NodeStats }
	type anyRemote struct{ RemoteWorkers }
	type anyWorkflows struct{ WorkflowAdmin }
	type anySchedules struct{ ScheduleAdmin }
	type anyFailures struct{ FailureAdmin }
	type anyFlow struct{ FlowAdmin }
	s := newServer(nil, nil, Options{Admin: anyAdmin{}, Node: anyNode{}, Remote: anyRemote{}, Workflows: anyWorkflows{},
		Schedules: anySchedules{}, Failures: anyFailures{}, Flow: anyFlow{}})
	var out []string
	for _, rt := range s.routes() {
		out = append(out, rt.method+" "+rt.path)
	}
	slices.Sort(out)
	return out
}

// documentedOperations is "METHOD /path" for every operation of the
// embedded OpenAPI document.
func documentedOperations(t *testing.T) []string {
	t.Helper()
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(openAPIDocument, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.1.") {
		t.Fatalf("openapi = %q, want 3.1.x", doc.OpenAPI)
	}
	methods := map[string]bool{"get": true, "put": true, "post": true, "delete": true, "options": true, "head": true, "patch": true, "trace": true}
	var out []string
	for path, item := range doc.Paths {
		for m := range item {
			if methods[m] {
				out = append(out, strings.ToUpper(m)+" "+path)
			}
		}
	}
	slices.Sort(out)
	return out
}

// Every route of the router has an operation in openapi.json, and every
// operation of openapi.json is a route of the router (path templates are
// spelled alike: {id}).
func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	routes, ops := routeSet(t), documentedOperations(t)
	for _, r := range routes {
		if !slices.Contains(ops, r) {
			t.Errorf("route %s has no operation in openapi.json", r)
		}
	}
	for _, op := range ops {
		if !slices.Contains(routes, op) {
			t.Errorf("openapi.json describes %s, which the router does not serve", op)
		}
	}
	if len(routes) < 20 {
		t.Fatalf("only %d routes: %v", len(routes), routes)
	}
}

// The document is served as is, with no key.
func TestOpenAPIServed(t *testing.T) {
	rec := httptest.NewRecorder()
	New(nil, nil, Options{}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/openapi.json", nil))
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/json" || rec.Body.String() != string(openAPIDocument) {
		t.Fatalf("GET /openapi.json = %d %q, %d bytes", rec.Code, rec.Header().Get("Content-Type"), rec.Body.Len())
	}
}
