package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/tracing"
)

// requestInfo is what the handlers tell the instrumentation about a
// request. It holds no payload, header or error text.
type requestInfo struct {
	route   string          // the matched mux pattern
	traceID string          // the request's trace ID (sent or made)
	tenant  string          // set once authenticated
	code    dockettype.Code // set when the answer is an error
	body    *bodyWatch      // the request's body, when it has one
	span    trace.Span      // the server span, when tracing

	bodyReserved bool  // the body's memory is reserved (reserveBody)
	bodyBytes    int64 // bytes reserved in the body budget, given back at the end
}

type infoKey struct{}

func infoFrom(ctx context.Context) *requestInfo {
	info, _ := ctx.Value(infoKey{}).(*requestInfo)
	return info
}

// statusWriter records the status a handler answers with. When the answer
// starts before the request body was read to its end (an early error, or a
// body cut off), it asks for the connection to be closed: the server would
// otherwise read on, at the client's pace, to reuse it.
type statusWriter struct {
	http.ResponseWriter
	body   *bodyWatch // nil when the request has no body
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
		if w.body != nil && !w.body.read() {
			w.Header().Set("Connection", "close")
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// instrument wraps the mux: it sets the trace context and the traceparent
// response header, recovers panics, writes the access log line and counts
// the request.
func (s *server) instrument(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := s.clock.Now()
		info := &requestInfo{route: routeUnmatched}
		ctx := r.Context()
		if s.spans.on {
			// The server span, a child of the caller's; the request's trace
			// ID is its trace ID.
			if sc, ok := traceparentContext(r.Header.Values("traceparent")); ok {
				ctx = trace.ContextWithRemoteSpanContext(ctx, sc)
			}
			ctx, info.span = s.spans.tracer.Start(ctx, methodLabel(r.Method), trace.WithSpanKind(trace.SpanKindServer),
				trace.WithTimestamp(start), trace.WithAttributes(attribute.String("http.request.method", methodLabel(r.Method))))
			if sc := info.span.SpanContext(); sc.IsValid() {
				info.traceID = sc.TraceID().String()
				w.Header().Set("traceparent", tracing.FormatTraceparent(sc))
			}
		}
		if info.traceID == "" {
			// Tracing off: no span, but the caller's span context still
			// says which trace a submitted task joins and whether it is
			// sampled (stored with the task, for the nodes that trace and
			// for remote workers).
			if sc, ok := traceparentContext(r.Header.Values("traceparent")); ok {
				ctx = trace.ContextWithRemoteSpanContext(ctx, sc)
				info.traceID = sc.TraceID().String()
				w.Header().Set("traceparent", formatTraceparent(info.traceID, sc.IsSampled()))
			} else {
				info.traceID = newTraceID()
				w.Header().Set("traceparent", formatTraceparent(info.traceID, true))
			}
		}
		sw := &statusWriter{ResponseWriter: w}
		r = r.WithContext(context.WithValue(ctx, infoKey{}, info))
		if r.Body != nil && r.Body != http.NoBody {
			sw.body = s.watchBody(w, r)
			defer sw.body.stop(r)
			r.Body, info.body = sw.body, sw.body
		}
		defer func() { s.bodies.release(info.bodyBytes) }()
		defer func() {
			if rec := recover(); rec != nil {
				if rec == http.ErrAbortHandler {
					// The handler chose to abort the connection: let the
					// server do so, after accounting for the request.
					s.finish(r, sw, info, start)
					panic(rec)
				}
				// The panic value may hold a payload: log the code only.
				s.log.ErrorContext(r.Context(), "handler panicked", "code", dockettype.CodeInternal,
					"route", info.route, "trace_id", info.traceID)
				if sw.status == 0 {
					writeError(sw, r, dockettype.NewError(dockettype.CodeInternal, ""))
				} else {
					info.code = dockettype.CodeInternal
				}
			}
			s.finish(r, sw, info, start)
		}()
		next.ServeHTTP(sw, r)
	})
}

// finish logs the access line and counts the request.
func (s *server) finish(r *http.Request, sw *statusWriter, info *requestInfo, start time.Time) {
	status := sw.status
	if status == 0 {
		status = http.StatusOK
	}
	elapsed := s.clock.Since(start)
	s.metrics.HTTPRequests.WithLabelValues(info.route, strconv.Itoa(status)).Inc()
	s.metrics.HTTPDuration.WithLabelValues(info.route, statusClass(status)).Observe(elapsed.Seconds())
	attrs := []slog.Attr{
		slog.String("method", methodLabel(r.Method)),
		slog.String("route", info.route),
		slog.Int("status", status),
		slog.Int64("duration_ms", elapsed.Milliseconds()),
		slog.String("trace_id", info.traceID),
	}
	if info.tenant != "" {
		attrs = append(attrs, slog.String("tenant", info.tenant))
	}
	if info.code != "" {
		attrs = append(attrs, slog.String("code", string(info.code)))
	}
	s.log.LogAttrs(r.Context(), slog.LevelInfo, "http request", attrs...)
	if span := info.span; span != nil {
		// The span's name is the route pattern ("POST /v1/tasks"), never
		// the path (it holds IDs and a tenant's filters).
		if info.route != routeUnmatched {
			span.SetName(info.route)
		}
		span.SetAttributes(attribute.String("http.route", info.route), attribute.Int("http.response.status_code", status))
		if info.tenant != "" {
			span.SetAttributes(tracing.AttrTenant.String(info.tenant))
		}
		if info.code != "" {
			span.SetAttributes(tracing.AttrCode.String(string(info.code)))
		}
		if status >= 500 {
			span.SetStatus(codes.Error, "")
		}
		span.End(trace.WithTimestamp(start.Add(elapsed)))
	}
}

// spans is the HTTP API's tracer: a server span per request when on.
type spans struct {
	on     bool
	tracer trace.Tracer
}

func newSpans(tp trace.TracerProvider) spans {
	return spans{on: tracing.Enabled(tp), tracer: tracing.Tracer(tp)}
}

// methodLabel is the method as logged: a known method, or OTHER. The method
// is the client's text, of any length.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "OTHER"
}

// statusClass is the metric label of a status: "2xx", "4xx", … (the 499
// of a client that left is "4xx").
func statusClass(status int) string {
	if status < 100 || status > 599 {
		return "other"
	}
	return strconv.Itoa(status/100) + "xx"
}
