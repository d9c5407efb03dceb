package httpapi

import (
	"net/http"

	"github.com/docket-dev/docket/internal/dashboard"
)

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
