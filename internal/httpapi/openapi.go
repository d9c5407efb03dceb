package httpapi

import (
	_ "embed"
	"net/http"
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
