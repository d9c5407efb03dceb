package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/trace"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/defaults"
	"github.com/docket-dev/docket/internal/metrics"
	"github.com/docket-dev/docket/internal/queue"
)

// DefaultMaxBodyBytes bounds a request body when Options.MaxBodyBytes is 0.
const DefaultMaxBodyBytes = defaults.MaxBodyBytes

// DefaultMaxBatchBodyBytes bounds the body of POST /v1/tasks/batch when
// Options.MaxBatchBodyBytes is 0: up to 1,000 tasks of about 16 KiB each.
const DefaultMaxBatchBodyBytes = defaults.MaxBatchBytes

// MaxBatchItems is the most tasks one POST /v1/tasks/batch may carry.
const MaxBatchItems = queue.MaxBatchItems

// MaxWait is the longest a long poll (GET /v1/tasks/{id}?wait=) may ask.
const MaxWait = queue.MaxWait

// Defaults of Options (package defaults holds them all).
const (
	DefaultBodyTimeout       = defaults.BodyTimeout
	DefaultMaxWaits          = defaults.MaxWaits
	DefaultMaxWaitsPerTenant = defaults.MaxWaitsPerTenant
)

// Executor is what the API needs from the ExecutionService.
// *queue.Service satisfies it. Errors are *dockettype.Error values; any
// other error is answered as 500 internal.
type Executor interface {
	Submit(ctx context.Context, p dockettype.Principal, req *queue.SubmitRequest) (*queue.SubmitResult, error)
	// SubmitBatch admits 1 to MaxBatchItems tasks and answers per item; its
	// error concerns the whole call.
	SubmitBatch(ctx context.Context, p dockettype.Principal, reqs []*queue.SubmitRequest) ([]queue.BatchResult, error)
	Get(ctx context.Context, p dockettype.Principal, id string) (*dockettype.Task, error)
	Wait(ctx context.Context, p dockettype.Principal, id string, wait time.Duration) (*dockettype.Task, error)
	List(ctx context.Context, p dockettype.Principal, req *queue.ListRequest) (*queue.ListResult, error)
	Cancel(ctx context.Context, p dockettype.Principal, id string) (*dockettype.Task, error)
	// Input returns the task's input exactly as admitted.
	Input(ctx context.Context, p dockettype.Principal, id string) ([]byte, error)
	// Retry queues a failed, timed_out or cancelled task again.
	Retry(ctx context.Context, p dockettype.Principal, id string) (*dockettype.Task, error)
	Events(ctx context.Context, p dockettype.Principal, id string) ([]dockettype.Event, error)
	Evidence(ctx context.Context, p dockettype.Principal, id string) ([]dockettype.Evidence, error)
	// Ready reports whether the store answers.
	Ready(ctx context.Context) error
}

// Authenticator resolves an API key to its principal. *auth.Authenticator
// satisfies it; when it also has Forget(keyID) (a cache of resolved keys),
// POST /v1/admin/keys/{id}/revoke calls it so that this node refuses the
// key at once. An unknown or revoked key is auth.ErrUnauthenticated (or a
// *dockettype.Error with CodeUnauthenticated); any other error means the
// key store could not answer and is answered as 503 store_unavailable.
type Authenticator interface {
	Authenticate(ctx context.Context, key string) (dockettype.Principal, error)
}

// Options tunes the handler. The zero value works.
type Options struct {
	// MaxBodyBytes bounds request bodies, and each task of a batch;
	// default DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// MaxBatchBodyBytes bounds the body of POST /v1/tasks/batch; default
	// DefaultMaxBatchBodyBytes.
	MaxBatchBodyBytes int64
	// Logger receives one access line per request; default slog.Default().
	Logger *slog.Logger
	// Metrics counts requests (HTTPRequests) and is served on /metrics;
	// default a fresh set. Pass the queue's set (Service.Metrics) so that
	// /metrics shows the queue's collectors too.
	Metrics *metrics.Metrics
	// Clock times requests for the access log and the body timeout;
	// default the real clock.
	Clock clockwork.Clock
	// TracerProvider receives a server span per request, a child of the
	// caller's traceparent; nil or a no-op provider: none.
	TracerProvider trace.TracerProvider

	// MaxBodyMemory bounds the bytes of request bodies read and decoded
	// at once on this server: a request reserves its Content-Length (its
	// route's limit when it sends none) before its body is read, until it
	// ends; one that does not fit is answered 429 too_many_requests with
	// Retry-After. Default DefaultMaxBodyMemory; defaults.Unlimited
	// (< 0): no bound.
	MaxBodyMemory int64
	// FreeMemory returns freed memory to the operating system after a
	// burst of bodies; default debug.FreeOSMemory.
	FreeMemory func()

	// Version is reported by GET /healthz.
	Version string
	// BodyTimeout is how long a client has, once its headers are in, to
	// send the whole request body; then the read is cut off, the answer is
	// 400 and the connection is closed. Default DefaultBodyTimeout.
	BodyTimeout time.Duration
	// MaxWaits and MaxWaitsPerTenant bound the long polls held at once, on
	// this server and per tenant; one more is answered 429
	// too_many_requests with Retry-After. Defaults DefaultMaxWaits and
	// DefaultMaxWaitsPerTenant; defaults.Unlimited (< 0): no bound.
	MaxWaits, MaxWaitsPerTenant int
	// MaxTimeout is the largest timeout_ms a submission may ask, checked
	// before any arithmetic; 0: the largest duration Go can represent (the
	// queue applies its own bound after).
	MaxTimeout time.Duration

	// Admin, when set, serves the admin API's tenant and key routes.
	Admin AdminStore
	// Node, when set with Admin, serves GET /v1/admin/stats with this
	// node's workers and schedulers.
	Node NodeStats
	// DefaultTenantLimit is the in-flight limit of a tenant the admin API
	// creates; default defaults.TenantLimit; defaults.Unlimited (< 0): none.
	DefaultTenantLimit int
	// DefaultStorageQuota is the storage quota of a tenant without its own,
	// as the admin API shows it; default defaults.TenantStorageQuota;
	// defaults.Unlimited (< 0): none. The queue enforces it
	// (queue.Config.StorageQuota).
	DefaultStorageQuota int64

	// Remote, when set, serves the worker API (/v1/worker/*).
	Remote RemoteWorkers
	// LeaseTTL tells GET /v1/admin/workers which workers are connected
	// (seen within it).
	LeaseTTL time.Duration
	// MaxWorkerWaits bounds the idle workers' long polls (claims with
	// wait_ms) held at once; default DefaultMaxWorkerWaits; < 0: no bound.
	MaxWorkerWaits int
	// Workflows, when set with Admin, serves the admin API's workflow
	// routes (remote workflows).
	Workflows WorkflowAdmin
	// Flow, when set with Admin, serves pause and resume, the tenants'
	// and workflows' rate limits and the concurrency per key.
	Flow FlowAdmin
	// Schedules, when set with Admin, serves the admin API's schedule
	// routes (periodic schedules).
	Schedules ScheduleAdmin
	// Failures, when set, serves the bulk actions and the dead-letter
	// views (the admins' ones with Admin).
	Failures FailureAdmin
}

// DefaultMaxWorkerWaits bounds the idle workers' claims held at once.
const DefaultMaxWorkerWaits = 10_000

// server holds the handler's dependencies.
type server struct {
	exec         Executor
	spans        spans
	authn        Authenticator
	adminStore   AdminStore
	node         NodeStats
	maxBody      int64
	maxBatchBody int64 // bounds a batch body
	bodyTimeout  time.Duration
	maxTimeout   time.Duration
	waits        *waitLimiter
	bodies       *bodyBudget
	workerWaits  *waitLimiter
	leaseTTL     time.Duration
	remote       RemoteWorkers
	workflows    WorkflowAdmin
	schedules    ScheduleAdmin
	failures     FailureAdmin
	flow         FlowAdmin
	log          *slog.Logger
	metrics      *metrics.Metrics
	clock        clockwork.Clock
	version      string
	tenantLimit  int
	storageQuota int64 // 0: unlimited
}

// route is one endpoint of the contract.
type route struct {
	method  string
	path    string
	handler http.HandlerFunc
}

// New returns the HTTP handler of the v1 contract.
func New(exec Executor, authn Authenticator, opts Options) http.Handler {
	return newServer(exec, authn, opts).handler()
}

// newServer applies the defaults of opts.
func newServer(exec Executor, authn Authenticator, opts Options) *server {
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.MaxBatchBodyBytes <= 0 {
		opts.MaxBatchBodyBytes = DefaultMaxBatchBodyBytes
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Metrics == nil {
		opts.Metrics = metrics.New()
	}
	if opts.Clock == nil {
		opts.Clock = clockwork.NewRealClock()
	}
	if opts.BodyTimeout <= 0 {
		opts.BodyTimeout = DefaultBodyTimeout
	}
	if opts.MaxWaits == 0 {
		opts.MaxWaits = DefaultMaxWaits
	}
	if opts.MaxWaitsPerTenant == 0 {
		opts.MaxWaitsPerTenant = DefaultMaxWaitsPerTenant
	}
	if opts.MaxWorkerWaits == 0 {
		opts.MaxWorkerWaits = DefaultMaxWorkerWaits
	}
	if opts.MaxBodyMemory == 0 {
		opts.MaxBodyMemory = DefaultMaxBodyMemory
	}
	if opts.MaxTimeout <= 0 {
		opts.MaxTimeout = time.Duration(math.MaxInt64)
	}
	s := &server{
		exec:         exec,
		authn:        authn,
		adminStore:   opts.Admin,
		node:         opts.Node,
		maxBody:      opts.MaxBodyBytes,
		maxBatchBody: opts.MaxBatchBodyBytes,
		bodyTimeout:  opts.BodyTimeout,
		maxTimeout:   opts.MaxTimeout,
		waits:        newWaitLimiter(opts.MaxWaits, opts.MaxWaitsPerTenant, opts.Metrics.HTTPLongPolls),
		bodies:       newBodyBudget(opts.MaxBodyMemory, opts.Clock, opts.Metrics.HTTPBodyBytes, opts.FreeMemory),
		workerWaits:  newWaitLimiter(opts.MaxWorkerWaits, -1, opts.Metrics.WorkerLongPolls),
		remote:       opts.Remote,
		leaseTTL:     opts.LeaseTTL,
		workflows:    opts.Workflows,
		schedules:    opts.Schedules,
		failures:     opts.Failures,
		flow:         opts.Flow,
		log:          opts.Logger.With("component", "http"),
		metrics:      opts.Metrics,
		spans:        newSpans(opts.TracerProvider),
		clock:        opts.Clock,
		version:      opts.Version,
		tenantLimit:  defaults.StoredTenantLimit(opts.DefaultTenantLimit),
		storageQuota: defaults.StoredStorageQuota(opts.DefaultStorageQuota),
	}
	return s
}

// handler routes the route table, answers 405 for the other methods of its
// paths and 404 elsewhere.
func (s *server) handler() http.Handler {
	routes := s.routes()
	mux := http.NewServeMux()
	allowed := map[string][]string{}
	var paths []string
	for _, rt := range routes {
		pattern := rt.method + " " + rt.path
		mux.Handle(pattern, withRoute(pattern, rt.handler))
		if _, ok := allowed[rt.path]; !ok {
			paths = append(paths, rt.path)
		}
		allowed[rt.path] = append(allowed[rt.path], rt.method)
		if rt.method == http.MethodGet {
			allowed[rt.path] = append(allowed[rt.path], http.MethodHead)
		}
	}
	// A pattern without a method is less specific than the same path with
	// one, so these only see the methods a path does not serve.
	for _, path := range paths {
		methods := allowed[path]
		slices.Sort(methods)
		h := methodNotAllowed(strings.Join(methods, ", "))
		if strings.HasPrefix(path, adminPrefix) {
			h = s.admin(ignorePrincipal(h))
		}
		handler := withRoute(path, h)
		if !shadowsWildcard[path] {
			mux.Handle(path, handler)
			continue
		}
		// A literal path beside a wildcard one ("/v1/tasks/batch" beside
		// "GET /v1/tasks/{id}") cannot have a method-less pattern: the mux
		// refuses the pair as ambiguous. Name the other methods instead.
		for _, m := range otherMethods(methods) {
			mux.Handle(m+" "+path, handler)
		}
	}
	// Every other admin path: a member learns nothing about which exist.
	mux.Handle(adminPrefix, withRoute(routeUnmatched, s.admin(ignorePrincipal(notFound))))
	mux.Handle("/", withRoute(routeUnmatched, notFound))
	return s.instrument(mux)
}

// routes is the route table: every method and path the handler serves.
// The OpenAPI document describes exactly these (TestOpenAPIDocumentsEveryRoute).
func (s *server) routes() []route {
	promHandler := promhttp.HandlerFor(s.metrics.Registry, promhttp.HandlerOpts{})
	routes := []route{
		{http.MethodPost, "/v1/tasks", s.authenticated(s.submit)},
		{http.MethodPost, "/v1/tasks/batch", s.authenticated(s.submitBatch)},
		{http.MethodGet, "/v1/tasks", s.authenticated(s.list)},
		{http.MethodGet, "/v1/tasks/{id}", s.authenticated(s.get)},
		{http.MethodPost, "/v1/tasks/{id}/cancel", s.authenticated(s.cancel)},
		{http.MethodPost, "/v1/tasks/{id}/retry", s.authenticated(s.retry)},
		{http.MethodGet, "/v1/tasks/{id}/evidence", s.authenticated(s.evidence)},
		{http.MethodGet, "/v1/tasks/{id}/events", s.authenticated(s.events)},
		{http.MethodGet, "/v1/tasks/{id}/input", s.authenticated(s.input)},
		{http.MethodGet, "/healthz", s.healthz},
		{http.MethodGet, "/readyz", s.readyz},
		{http.MethodGet, "/metrics", promHandler.ServeHTTP},
		{http.MethodGet, "/openapi.json", serveOpenAPI},
		{http.MethodGet, "/ui", serveDashboard},
		{http.MethodGet, "/ui/{file}", serveDashboardFile},
	}
	routes = append(routes, s.workerRoutes()...)
	routes = append(routes, s.failureRoutes()...)
	return append(routes, s.adminRoutes()...)
}

// shadowsWildcard lists the literal paths that a wildcard route of another
// method also matches.
var shadowsWildcard = map[string]bool{"/v1/tasks/batch": true, "/v1/tasks/bulk": true, "/v1/tasks/dead-letters": true}

// otherMethods returns the standard methods not in allowed.
func otherMethods(allowed []string) []string {
	var out []string
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace} {
		if !slices.Contains(allowed, m) {
			out = append(out, m)
		}
	}
	return out
}

// routeUnmatched is the route label of requests no pattern matched.
const routeUnmatched = "unmatched"

// withRoute records the matched pattern for the access log and metrics.
func withRoute(pattern string, h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if info := infoFrom(r.Context()); info != nil {
			info.route = pattern
		}
		h(w, r)
	})
}

func methodNotAllowed(allow string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allow)
		writeErrorStatus(w, r, http.StatusMethodNotAllowed, dockettype.CodeMethodNotAllowed,
			"method not allowed; this route accepts "+allow)
	}
}

func notFound(w http.ResponseWriter, r *http.Request) {
	writeErrorStatus(w, r, http.StatusNotFound, dockettype.CodeNotFound, "no such route")
}

// healthBody is the answer of GET /healthz.
type healthBody struct {
	Status  string `json:"status"`
	Version string `json:"version,omitempty"`
}

func (s *server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, r, http.StatusOK, healthBody{Status: "ok", Version: s.version})
}

func (s *server) readyz(w http.ResponseWriter, r *http.Request) {
	if err := s.exec.Ready(r.Context()); err != nil {
		if clientGone(r) {
			writeClientGone(w, r)
			return
		}
		// The reason, when the service gives one: store_corrupt or
		// writes_failing; any other failure is store_unavailable.
		if de, ok := errors.AsType[*dockettype.Error](err); ok &&
			(de.Code == dockettype.CodeStoreCorrupt || de.Code == dockettype.CodeWritesFailing) {
			writeErrorStatus(w, r, http.StatusServiceUnavailable, de.Code, de.Message)
			return
		}
		writeErrorStatus(w, r, http.StatusServiceUnavailable, dockettype.CodeStoreUnavailable, "the task store is unavailable")
		return
	}
	writeJSON(w, r, http.StatusOK, map[string]string{"status": "ok"})
}
