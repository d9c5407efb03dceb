package otlp

import (
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

func TestHTTPConfigFromEnv(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		env     map[string]string
		url     string
		headers map[string]string
		gzip    bool
		timeout time.Duration
		err     string
	}{
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h:4318"}, url: "http://h:4318/v1/traces", timeout: 10 * time.Second},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://h/base/"}, url: "https://h/base/v1/traces", timeout: 10 * time.Second},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h:4318", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t:1/custom"},
			url: "http://t:1/custom", timeout: 10 * time.Second},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t:1"}, url: "http://t:1/", timeout: 10 * time.Second},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h", "OTEL_EXPORTER_OTLP_HEADERS": "a=1, b = x%20y",
			"OTEL_EXPORTER_OTLP_COMPRESSION": "gzip", "OTEL_EXPORTER_OTLP_TIMEOUT": "500"},
			url: "http://h/v1/traces", headers: map[string]string{"a": "1", "b": "x y"}, gzip: true, timeout: 500 * time.Millisecond},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h", "OTEL_EXPORTER_OTLP_HEADERS": "a=1",
			"OTEL_EXPORTER_OTLP_TRACES_HEADERS": "c=3", "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip", "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "none"},
			url: "http://h/v1/traces", headers: map[string]string{"c": "3"}, timeout: 10 * time.Second},
		{env: map[string]string{}, err: "no OTLP endpoint"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "h:4318"}, err: "not an http:// or https:// URL"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h", "OTEL_EXPORTER_OTLP_HEADERS": "novalue"}, err: "not key=value"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h", "OTEL_EXPORTER_OTLP_HEADERS": "a=%zz"}, err: "not URL-encoded"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h", "OTEL_EXPORTER_OTLP_TIMEOUT": "10s"}, err: "milliseconds"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h", "OTEL_EXPORTER_OTLP_COMPRESSION": "zstd"}, err: "not supported"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h", "OTEL_EXPORTER_OTLP_CERTIFICATE": filepath.Join(dir, "missing.pem")},
			err: "certificate"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h", "OTEL_EXPORTER_OTLP_CERTIFICATE": notPEM}, err: "no PEM certificate"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h", "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": notPEM}, err: "set together"},
	} {
		cfg, err := httpConfigFromEnv(func(k string) string { return c.env[k] }, os.ReadFile)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%v: error %v, want one saying %q", c.env, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%v: %v", c.env, err)
			continue
		}
		if cfg.url != c.url || cfg.gzip != c.gzip || cfg.timeout != c.timeout || len(cfg.headers) != len(c.headers) {
			t.Errorf("%v: %+v, want url %s gzip %v timeout %v headers %v", c.env, cfg, c.url, c.gzip, c.timeout, c.headers)
		}
		for k, v := range c.headers {
			if cfg.headers[k] != v {
				t.Errorf("%v: header %s = %q, want %q", c.env, k, cfg.headers[k], v)
			}
		}
	}
}

// testExporter is an exporter to url that tries again at once.
func testExporter(t *testing.T, url string, gzip bool) *httpExporter {
	t.Helper()
	x := newHTTPExporter(httpConfig{url: url, headers: map[string]string{"authorization": "Bearer k"}, gzip: gzip,
		timeout: 5 * time.Second, retryMin: time.Millisecond, retryMax: 2 * time.Millisecond, retryFor: 5 * time.Second})
	t.Cleanup(func() { _ = x.Shutdown(context.Background()) })
	return x
}

// The exporter posts the encoded request, with the configured headers,
// gzipped when asked.
func TestExporterSends(t *testing.T) {
	spans := sampleSpans(t)
	for _, zipped := range []bool{false, true} {
		var got atomic.Pointer[http.Request]
		var body []byte
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var rd io.Reader = r.Body
			if r.Header.Get("Content-Encoding") == "gzip" {
				zr, err := gzip.NewReader(r.Body)
				if err != nil {
					http.Error(w, "bad gzip", http.StatusBadRequest)
					return
				}
				rd = zr
			}
			body, _ = io.ReadAll(rd)
			got.Store(r)
		}))
		x := testExporter(t, srv.URL+"/v1/traces", zipped)
		if err := x.ExportSpans(context.Background(), spans); err != nil {
			t.Fatalf("gzip %v: %v", zipped, err)
		}
		srv.Close()
		r := got.Load()
		if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" ||
			r.Header.Get("Authorization") != "Bearer k" || (r.Header.Get("Content-Encoding") == "gzip") != zipped {
			t.Errorf("gzip %v: request %s %v", zipped, r.URL.Path, r.Header)
		}
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil || countSpans(&req) != len(spans) {
			t.Errorf("gzip %v: %d spans received (%v), want %d", zipped, countSpans(&req), err, len(spans))
		}
	}
}

// 429, 502, 503 and 504 are tried again; another status fails the batch
// at once; the receiver's body is never in the error.
func TestExporterRetries(t *testing.T) {
	spans := sampleSpans(t)
	var calls atomic.Int32
	answers := []int{503, 429, 502, 504, 200}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(calls.Add(1)) - 1
		w.WriteHeader(answers[min(n, len(answers)-1)])
		_, _ = io.WriteString(w, "secret body")
	}))
	defer srv.Close()
	if err := testExporter(t, srv.URL, false).ExportSpans(context.Background(), spans); err != nil || calls.Load() != 5 {
		t.Fatalf("after four retryable answers: %v, %d calls", err, calls.Load())
	}

	calls.Store(0)
	answers = []int{400}
	err := testExporter(t, srv.URL, false).ExportSpans(context.Background(), spans)
	if err == nil || calls.Load() != 1 || !strings.Contains(err.Error(), "400") || strings.Contains(err.Error(), "secret") {
		t.Fatalf("400: %v after %d calls", err, calls.Load())
	}
}

// A receiver's partial success is an error with the count of rejected
// spans, not its message.
func TestExporterPartialSuccess(t *testing.T) {
	res, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{PartialSuccess: &coltracepb.ExportTracePartialSuccess{
		RejectedSpans: 2, ErrorMessage: "secret message"}})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(res)
	}))
	defer srv.Close()
	err := testExporter(t, srv.URL, false).ExportSpans(context.Background(), sampleSpans(t))
	if err == nil || !strings.Contains(err.Error(), "rejected 2 spans") || strings.Contains(err.Error(), "secret") {
		t.Fatalf("partial success: %v", err)
	}
}

// A retrying export ends with Shutdown or its context; exports after
// Shutdown fail; an unreachable receiver is tried until the retry time
// runs out.
func TestExporterStops(t *testing.T) {
	spans := sampleSpans(t)
	answered := make(chan struct{}, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		answered <- struct{}{}
	}))
	defer srv.Close()

	x := testExporter(t, srv.URL, false)
	x.cfg.retryMin, x.cfg.retryMax, x.cfg.retryFor = time.Hour, time.Hour, 24*time.Hour
	done := make(chan error, 1)
	go func() { done <- x.ExportSpans(context.Background(), spans) }()
	<-answered // the export is past its first try, about to wait an hour
	_ = x.Shutdown(context.Background())
	if err := <-done; err == nil {
		t.Fatal("an export waiting to retry succeeded after Shutdown")
	}
	if err := x.ExportSpans(context.Background(), spans); err == nil {
		t.Fatal("an export after Shutdown succeeded")
	}

	x = testExporter(t, srv.URL, false)
	x.cfg.retryMin, x.cfg.retryMax, x.cfg.retryFor = time.Hour, time.Hour, 24*time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	go func() { done <- x.ExportSpans(ctx, spans) }()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled export: %v", err)
	}

	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	x = testExporter(t, closed.URL, false)
	x.cfg.retryFor = 20 * time.Millisecond
	if err := x.ExportSpans(context.Background(), spans); err == nil || !strings.Contains(err.Error(), "could not be reached") {
		t.Fatalf("unreachable receiver: %v", err)
	}
}

// A receiver that keeps answering 503 is tried again after 5 s, then
// longer, for at most a minute of the exporter's clock.
func TestExporterRetriesForAMinute(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	clock := clockwork.NewFakeClock()
	x := testExporter(t, srv.URL, false)
	x.clock = clock
	x.cfg.retryMin, x.cfg.retryMax, x.cfg.retryFor = 5*time.Second, 30*time.Second, time.Minute
	start := clock.Now()
	done := make(chan error, 1)
	go func() { done <- x.ExportSpans(context.Background(), sampleSpans(t)) }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "503") {
				t.Fatalf("export: %v, want the 503", err)
			}
			if n := calls.Load(); n < 2 {
				t.Fatalf("%d tries, want retries", n)
			}
			if spent := clock.Since(start); spent > time.Minute {
				t.Fatalf("kept trying for %v", spent)
			}
			return
		default:
		}
		// Wait for the exporter's timer (or its return), then let it fire.
		waitCtx, waitCancel := context.WithTimeout(ctx, 100*time.Millisecond)
		err := clock.BlockUntilContext(waitCtx, 1)
		waitCancel()
		if ctx.Err() != nil {
			t.Fatal("the export did not end")
		}
		if err == nil {
			clock.Advance(time.Second)
		}
	}
}
