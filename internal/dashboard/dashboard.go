// Package dashboard holds the operator dashboard that `docket serve` shows
// at /ui: plain HTML, CSS and JavaScript embedded in the binary (no build
// step, no CDN, works offline). The page signs in with an API key kept in
// the browser's sessionStorage and reads the v1 API like any other client;
// the server side only serves these files, with strict security headers.
//
//	mux.HandleFunc("GET /ui", func(w http.ResponseWriter, r *http.Request) {
//		dashboard.Serve(w, r, dashboard.Index)
//	})
package dashboard

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"time"
)

// Index is the name of the dashboard's page.
const Index = "index.html"

// ContentSecurityPolicy allows the page to load its own files and call its
// own origin, nothing else: no inline script or style, no other origin, no
// framing, no form posts (the sign-in form is handled by the script, so a
// key never ends up in a URL).
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

//go:embed assets
var assets embed.FS

// file is one embedded file, ready to serve.
type file struct {
	body        []byte
	contentType string
	etag        string
}

// files maps a file name (flat: no folders) to the file.
var files = loadFiles()

var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".svg":  "image/svg+xml",
	".png":  "image/png",
}

func loadFiles() map[string]file {
	out := map[string]file{}
	entries, err := fs.ReadDir(assets, "assets")
	if err != nil {
		panic(err) // the embedded folder is part of the binary
	}
	for _, e := range entries {
		ct, ok := contentTypes[path.Ext(e.Name())]
		if e.IsDir() || !ok {
			continue
		}
		body, err := assets.ReadFile("assets/" + e.Name())
		if err != nil {
			panic(err)
		}
		sum := sha256.Sum256(body)
		out[e.Name()] = file{body: body, contentType: ct, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
	}
	return out
}

// Serve writes the embedded file name with the dashboard's security
// headers, and reports false (writing nothing) when there is no such file.
// A request whose If-None-Match names the file's ETag gets 304.
func Serve(w http.ResponseWriter, r *http.Request, name string) bool {
	f, ok := files[name]
	if !ok {
		return false
	}
	h := w.Header()
	h.Set("Content-Type", f.contentType)
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	// Revalidate every time, so a new binary's files are used at once.
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", f.etag)
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(f.body))
	return true
}
