package httpapi

import (
	_ "embed"
	"net/http"

	"github.com/docket-dev/docket/internal/dashboard"
)

// openAPIDocument is the OpenAPI 3.1 description of every route of the
// handler, written by hand (openapi.json beside this file).
//
//go:embed openapi.json
var openAPIDocument []byte

// serveOpenAPI serves GET /openapi.json; no key needed.
func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Content-Type-Options", "nosniff")
	// Public and read-only: API tools on other origins may fetch it.
	h.Set("Access-Control-Allow-Origin", "*")
	_, _ = w.Write(openAPIDocument)
}

// serveDashboard serves GET /ui: the dashboard's page. No key is needed to
// load it; the page signs in with one.
func serveDashboard(w http.ResponseWriter, r *http.Request) {
	dashboard.Serve(w, r, dashboard.Index)
}

// serveDashboardFile serves GET /ui/{file}: the dashboard's scripts and
// stylesheet.
func serveDashboardFile(w http.ResponseWriter, r *http.Request) {
	if !dashboard.Serve(w, r, r.PathValue("file")) {
		notFound(w, r)
	}
}
