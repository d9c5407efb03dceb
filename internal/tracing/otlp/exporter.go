package otlp

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// httpExporter sends spans to an OTLP/HTTP receiver as protobuf, written
// by the encoder (see encoder for why Docket does not use the official
// exporter's encoding). It reads the same OTEL_EXPORTER_OTLP_* variables
// as the official one and behaves as it does: a 429, 502, 503 or 504, or a
// connection that fails, is tried again after 5 s, then longer (up to 30 s
// apart, a Retry-After header wins), for at most a minute and within the
// export's context; any other answer fails the batch. The errors it
// returns name the status, never the receiver's body.
type httpExporter struct {
	cfg    httpConfig
	client *http.Client
	clock  clockwork.Clock // the retries' waits

	mu   sync.Mutex // one export at a time: the encoder's buffers are shared
	enc  encoder
	zbuf bytes.Buffer
	zw   *gzip.Writer

	stopOnce sync.Once
	stop     chan struct{} // closed by Shutdown: retries end
}

// httpConfig is what the OTEL_EXPORTER_OTLP_* variables say.
type httpConfig struct {
	url      string
	headers  map[string]string
	gzip     bool
	timeout  time.Duration // a request's
	tls      *tls.Config   // nil: the default
	retryMin time.Duration // the first retry's wait
	retryMax time.Duration // the longest wait
	retryFor time.Duration // how long an export keeps trying
}

// httpConfigFromEnv reads the exporter's variables. A signal's own
// variable (OTEL_EXPORTER_OTLP_TRACES_…) wins over the general one; the
// general endpoint is a base URL to which /v1/traces is added, the
// traces endpoint a URL used as it is.
func httpConfigFromEnv(getenv func(string) string, readFile func(string) ([]byte, error)) (httpConfig, error) {
	cfg := httpConfig{timeout: 10 * time.Second, headers: map[string]string{},
		retryMin: 5 * time.Second, retryMax: 30 * time.Second, retryFor: time.Minute}
	get := func(name string) (string, bool) {
		if v := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_" + name)); v != "" {
			return v, true
		}
		v := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_" + name))
		return v, v != ""
	}

	if v := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")); v != "" {
		u, err := endpointURL("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", v)
		if err != nil {
			return cfg, err
		}
		if u.Path == "" {
			u.Path = "/"
		}
		cfg.url = u.String()
	} else if v := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_ENDPOINT")); v != "" {
		u, err := endpointURL("OTEL_EXPORTER_OTLP_ENDPOINT", v)
		if err != nil {
			return cfg, err
		}
		u.Path = path.Join("/", u.Path, "v1/traces")
		cfg.url = u.String()
	} else {
		return cfg, errors.New("no OTLP endpoint")
	}

	if v, ok := get("HEADERS"); ok {
		for _, pair := range strings.Split(v, ",") {
			k, val, found := strings.Cut(pair, "=")
			k = strings.TrimSpace(k)
			if !found || k == "" {
				return cfg, errors.New("OTEL_EXPORTER_OTLP headers: an entry is not key=value")
			}
			dec, err := url.PathUnescape(strings.TrimSpace(val))
			if err != nil {
				return cfg, fmt.Errorf("OTEL_EXPORTER_OTLP headers: the value of %q is not URL-encoded", k)
			}
			cfg.headers[k] = dec
		}
	}
	if v, ok := get("COMPRESSION"); ok {
		switch v {
		case "gzip":
			cfg.gzip = true
		case "none":
		default:
			return cfg, fmt.Errorf("OTLP compression %q is not supported (gzip or none)", v)
		}
	}
	if v, ok := get("TIMEOUT"); ok {
		ms, err := strconv.Atoi(v)
		if err != nil || ms <= 0 {
			return cfg, fmt.Errorf("OTLP timeout %q is not a positive number of milliseconds", v)
		}
		cfg.timeout = time.Duration(ms) * time.Millisecond
	}

	var tlsConf tls.Config
	custom := false
	if file, ok := get("CERTIFICATE"); ok {
		pem, err := readFile(file)
		if err != nil {
			return cfg, fmt.Errorf("OTLP certificate: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return cfg, errors.New("OTLP certificate: no PEM certificate in the file")
		}
		tlsConf.RootCAs, custom = pool, true
	}
	certFile, okCert := get("CLIENT_CERTIFICATE")
	keyFile, okKey := get("CLIENT_KEY")
	if okCert != okKey {
		return cfg, errors.New("OTLP client certificate and key are set together")
	}
	if okCert {
		certPEM, err := readFile(certFile)
		if err != nil {
			return cfg, fmt.Errorf("OTLP client certificate: %w", err)
		}
		keyPEM, err := readFile(keyFile)
		if err != nil {
			return cfg, fmt.Errorf("OTLP client key: %w", err)
		}
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return cfg, fmt.Errorf("OTLP client certificate: %w", err)
		}
		tlsConf.Certificates, custom = []tls.Certificate{cert}, true
	}
	if custom {
		cfg.tls = &tlsConf
	}
	return cfg, nil
}

func endpointURL(name, v string) (*url.URL, error) {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%s is not an http:// or https:// URL", name)
	}
	return u, nil
}

func newHTTPExporter(cfg httpConfig) *httpExporter {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if cfg.tls != nil {
		tr.TLSClientConfig = cfg.tls
	}
	return &httpExporter{cfg: cfg, client: &http.Client{Transport: tr, Timeout: cfg.timeout}, clock: clockwork.NewRealClock(),
		stop: make(chan struct{})}
}

// ExportSpans sends one batch (sdktrace.SpanExporter).
func (x *httpExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if len(spans) == 0 {
		return nil
	}
	select {
	case <-x.stop:
		return errors.New("tracing: the OTLP exporter is shut down")
	default:
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	body := x.enc.encode(spans)
	if x.cfg.gzip {
		x.zbuf.Reset()
		if x.zw == nil {
			x.zw = gzip.NewWriter(&x.zbuf)
		} else {
			x.zw.Reset(&x.zbuf)
		}
		if _, err := x.zw.Write(body); err != nil {
			return err
		}
		if err := x.zw.Close(); err != nil {
			return err
		}
		body = x.zbuf.Bytes()
	}

	started := x.clock.Now()
	wait := x.cfg.retryMin
	for {
		retry, after, err := x.send(ctx, body)
		if !retry {
			return err
		}
		if after <= 0 {
			// Jittered, as the official exporter's backoff is.
			after = wait/2 + rand.N(wait)
			wait = min(2*wait, x.cfg.retryMax)
		}
		if x.clock.Since(started)+after > x.cfg.retryFor {
			return err
		}
		t := x.clock.NewTimer(after)
		select {
		case <-t.Chan():
		case <-ctx.Done():
			t.Stop()
			return errors.Join(err, ctx.Err())
		case <-x.stop:
			t.Stop()
			return err
		}
	}
}

// send posts body once. retry says whether the failure is worth trying
// again, after the wait the receiver asked for (0: none said).
func (x *httpExporter) send(ctx context.Context, body []byte) (retry bool, after time.Duration, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, x.cfg.url, bytes.NewReader(body))
	if err != nil {
		return false, 0, fmt.Errorf("tracing: OTLP request: %w", err)
	}
	for k, v := range x.cfg.headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("User-Agent", "docket-otlp-exporter")
	if x.cfg.gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	resp, err := x.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return false, 0, fmt.Errorf("tracing: OTLP export: %w", ctx.Err())
		}
		return true, 0, errors.New("tracing: OTLP export: the receiver could not be reached")
	}
	defer resp.Body.Close()
	const maxBody = 64 << 10
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode <= 299:
		return false, 0, partialSuccess(resp.Header.Get("Content-Type"), raw)
	case resp.StatusCode == http.StatusTooManyRequests, resp.StatusCode == http.StatusBadGateway,
		resp.StatusCode == http.StatusServiceUnavailable, resp.StatusCode == http.StatusGatewayTimeout:
		if s, perr := strconv.Atoi(resp.Header.Get("Retry-After")); perr == nil && s > 0 {
			after = time.Duration(s) * time.Second
		}
		return true, after, fmt.Errorf("tracing: OTLP export: the receiver answered %d", resp.StatusCode)
	}
	return false, 0, fmt.Errorf("tracing: OTLP export: the receiver answered %d", resp.StatusCode)
}

// partialSuccess is the error a successful answer reports: spans the
// receiver rejected (a count, not its message).
func partialSuccess(contentType string, raw []byte) error {
	if len(raw) == 0 || contentType != "application/x-protobuf" {
		return nil
	}
	var res coltracepb.ExportTraceServiceResponse
	if err := proto.Unmarshal(raw, &res); err != nil {
		return errors.New("tracing: OTLP export: the receiver's answer is not an export response")
	}
	if n := res.GetPartialSuccess().GetRejectedSpans(); n > 0 {
		return fmt.Errorf("tracing: OTLP export: the receiver rejected %d spans", n)
	}
	return nil
}

// Shutdown ends retries and closes idle connections
// (sdktrace.SpanExporter). Exports after it fail.
func (x *httpExporter) Shutdown(ctx context.Context) error {
	x.stopOnce.Do(func() { close(x.stop) })
	x.client.CloseIdleConnections()
	return ctx.Err()
}
