package dashboard_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/docket-dev/docket/internal/dashboard"
	"github.com/docket-dev/docket/internal/httpapi"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The API's handler serves the page and its files with the dashboard's
// security headers, no key needed; an unknown file is the API's 404.
func TestServedWithSecurityHeaders(t *testing.T) {
	h := httpapi.New(nil, nil, httpapi.Options{Logger: slog.New(slog.DiscardHandler)})
	cases := []struct{ path, contentType string }{
		{"/ui", "text/html; charset=utf-8"},
		{"/ui/style.css", "text/css; charset=utf-8"},
	}
	// Every module, with the type a browser requires of a module script.
	for _, name := range modules(t) {
		cases = append(cases, struct{ path, contentType string }{"/ui/" + name, "text/javascript; charset=utf-8"})
	}
	for _, c := range cases {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, c.path, nil))
		if rec.Code != http.StatusOK || rec.Body.Len() == 0 {
			t.Fatalf("GET %s = %d, %d bytes", c.path, rec.Code, rec.Body.Len())
		}
		want := map[string]string{
			"Content-Type":            c.contentType,
			"Content-Security-Policy": dashboard.ContentSecurityPolicy,
			"X-Content-Type-Options":  "nosniff",
			"X-Frame-Options":         "DENY",
			"Referrer-Policy":         "no-referrer",
			"Cache-Control":           "no-cache",
		}
		for k, v := range want {
			if got := rec.Header().Get(k); got != v {
				t.Errorf("GET %s: %s = %q, want %q", c.path, k, got, v)
			}
		}
		// The browser revalidates with the ETag and gets 304.
		req := httptest.NewRequest(http.MethodGet, c.path, nil)
		req.Header.Set("If-None-Match", rec.Header().Get("ETag"))
		rec2 := httptest.NewRecorder()
		h.ServeHTTP(rec2, req)
		if rec2.Code != http.StatusNotModified {
			t.Errorf("GET %s with its ETag = %d, want 304", c.path, rec2.Code)
		}
	}
	for _, p := range []string{"/ui/nope.js", "/ui/..%2fdashboard.go", "/ui/assets"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, p, nil))
		if rec.Code != http.StatusNotFound || !strings.Contains(rec.Body.String(), `"not_found"`) {
			t.Errorf("GET %s = %d %s, want 404 not_found", p, rec.Code, rec.Body)
		}
	}
	for _, directive := range []string{"script-src 'self'", "frame-ancestors 'none'", "default-src 'none'", "connect-src 'self'", "form-action 'none'"} {
		if !strings.Contains(dashboard.ContentSecurityPolicy, directive) {
			t.Errorf("the CSP lacks %s", directive)
		}
	}
	if strings.Contains(dashboard.ContentSecurityPolicy, "unsafe-") {
		t.Errorf("the CSP allows unsafe sources: %s", dashboard.ContentSecurityPolicy)
	}
}

// The files keep the rules the CSP and the data need: no inline script,
// handler or style in the page, every file it names is served, and the
// scripts never build HTML from strings nor keep the key anywhere but
// sessionStorage. The page loads one module, app.js; every module it
// imports, directly or not, is served, and every module served is one of
// them. No script names a workflow: the names come from the API (or the
// page's list of examples).
func TestAssetsKeepTheirRules(t *testing.T) {
	page := file(t, dashboard.Index)
	scripts := regexp.MustCompile(`(?is)<script\b[^>]*>`).FindAllString(page, -1)
	if len(scripts) != 1 || scripts[0] != `<script type="module" src="/ui/app.js">` {
		t.Errorf("the page's scripts = %q, want only the module /ui/app.js", scripts)
	}
	for _, m := range scripts {
		if !strings.Contains(m, `src="/ui/`) {
			t.Errorf("inline script in the page: %s", m)
		}
	}
	if regexp.MustCompile(`(?is)<script\b[^>]*>\s*[^<\s]`).MatchString(page) {
		t.Error("a script element with a body")
	}
	if m := regexp.MustCompile(`(?i)\son[a-z]+\s*=|\sstyle\s*=|javascript:`).FindString(page); m != "" {
		t.Errorf("inline handler or style in the page: %q", m)
	}
	for _, m := range regexp.MustCompile(`(?:src|href)="/ui/([^"]+)"`).FindAllStringSubmatch(page, -1) {
		if !dashboard.Serve(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/ui/"+m[1], nil), m[1]) {
			t.Errorf("the page names /ui/%s, which is not served", m[1])
		}
	}
	importRE := regexp.MustCompile(`(?m)^\s*(?:import|export)\b[^;]*?\bfrom\s+"([^"]+)";`)
	reached := map[string]bool{}
	todo := []string{"app.js"}
	for len(todo) > 0 {
		name := todo[0]
		todo = todo[1:]
		if reached[name] {
			continue
		}
		reached[name] = true
		script := file(t, name)
		for _, banned := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function",
			"localStorage", "document.cookie", "console.", "setAttribute(\"style\"", "?key=", "import(",
			"quality.evaluate", "demo.echo", "demo.sleep", "demo.fail"} {
			if strings.Contains(script, banned) {
				t.Errorf("%s uses %s", name, banned)
			}
		}
		for _, m := range importRE.FindAllStringSubmatch(script, -1) {
			dep, ok := strings.CutPrefix(m[1], "./")
			if !ok || strings.Contains(dep, "/") {
				t.Errorf("%s imports %q: modules are flat, imported as ./name.js", name, m[1])
				continue
			}
			todo = append(todo, dep)
		}
	}
	for _, name := range modules(t) {
		if !reached[name] {
			t.Errorf("%s is served but no module imports it", name)
		}
	}
}

// modules lists the dashboard's scripts, from its assets folder.
func modules(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir("assets")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".js") {
			out = append(out, e.Name())
		}
	}
	if len(out) < 2 {
		t.Fatalf("modules = %v", out)
	}
	return out
}

func file(t *testing.T, name string) string {
	t.Helper()
	rec := httptest.NewRecorder()
	if !dashboard.Serve(rec, httptest.NewRequest(http.MethodGet, "/ui/"+name, nil), name) {
		t.Fatalf("%s is not served", name)
	}
	return rec.Body.String()
}
