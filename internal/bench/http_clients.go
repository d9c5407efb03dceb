package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/docket-dev/docket/client"
	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/auth"
	"github.com/docket-dev/docket/internal/httpapi"
)

// statusTransportError counts requests that got no HTTP answer.
const statusTransportError = 0

// httpClients serves the API on a loopback port and runs Clients clients,
// each submitting tasks one at a time with its own idempotency keys, for
// Duration. It measures submits per second and per-request latency; the
// pools work meanwhile, and the tasks admitted are drained afterwards,
// untimed (unless the run has no workers).
func (h *harness) httpClients(ctx context.Context) (*Result, error) {
	if err := h.svc.Start(ctx); err != nil {
		return nil, fmt.Errorf("start the service: %w", err)
	}
	keys := make([]string, len(h.tenants))
	for i, t := range h.tenants {
		k, _, err := auth.CreateKey(ctx, h.st, h.clock.Now(), t.Tenant, t.Name, dockettype.RoleMember)
		if err != nil {
			return nil, fmt.Errorf("create an API key: %w", err)
		}
		keys[i] = k
	}
	baseURL, stopServing, err := h.serveAPI()
	if err != nil {
		return nil, err
	}
	defer stopServing()

	clients := h.opts.Clients
	tr := &http.Transport{MaxIdleConns: clients, MaxIdleConnsPerHost: clients, IdleConnTimeout: time.Minute}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}

	type clientStats struct {
		lat     []time.Duration
		answers map[int]int
	}
	stats := make([]clientStats, clients)
	var stop atomic.Bool
	var created atomic.Int64
	var wg sync.WaitGroup
	start := h.clock.Now()
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := client.New(baseURL, keys[i%len(keys)], client.WithHTTPClient(hc))
			st := &stats[i]
			st.answers = map[int]int{}
			for j := 0; !stop.Load() && ctx.Err() == nil; j++ {
				t0 := h.clock.Now()
				res, err := c.Submit(ctx, &client.SubmitParams{IdempotencyKey: fmt.Sprintf("bench-%s-c%d-%d", h.run, i, j), Workflow: Workflow})
				st.lat = append(st.lat, h.clock.Since(t0))
				var ce *client.Error
				switch {
				case err == nil && res.Replayed:
					st.answers[http.StatusOK]++
				case err == nil:
					st.answers[http.StatusCreated]++
					created.Add(1)
					h.sample.add(res.Task.Tenant, res.Task.ID)
				case errors.As(err, &ce):
					st.answers[ce.StatusCode]++
				case ctx.Err() != nil:
					return
				default:
					st.answers[statusTransportError]++
				}
			}
		}()
	}
	p := newProgress(h.opts.Progress, h.clock, h.opts.ProgressEvery)
	p.reset("submit", 0)
	tick := h.clock.NewTicker(pollEvery)
	for h.clock.Since(start) < h.opts.Duration && ctx.Err() == nil {
		p.maybe(func() string {
			n := int(created.Load())
			return fmt.Sprintf("%d created  %8.0f submits/s", n, p.rate(n))
		})
		<-tick.Chan()
	}
	tick.Stop()
	stop.Store(true)
	wg.Wait()
	seconds := h.clock.Since(start).Seconds()
	if err := ctx.Err(); err != nil {
		return nil, context.Cause(ctx)
	}

	res := &Result{Seconds: seconds, PeakRSSBytes: peakRSS(), Clients: clients, Answers: map[int]int{}, Latency: "request"}
	var lat []time.Duration
	for _, st := range stats {
		lat = append(lat, st.lat...)
		for status, n := range st.answers {
			res.Answers[status] += n
		}
	}
	slices.Sort(lat)
	res.P50MS, res.P99MS, res.LatencySamples = percentileMS(lat, 0.50), percentileMS(lat, 0.99), len(lat)
	res.Tasks = res.Answers[http.StatusCreated]
	res.Admitted = res.Tasks

	if h.svc.Config().Online.Workers > 0 {
		p.reset("drain", 0)
		if _, err := h.waitTerminal(ctx, res.Admitted, p, func() string {
			return fmt.Sprintf("%d/%d terminal", h.terminal(), res.Admitted)
		}); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// serveAPI serves the service's HTTP API (with the worker API in remote
// mode) on a loopback port until stop is called.
func (h *harness) serveAPI() (baseURL string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("listen on a loopback port: %w", err)
	}
	api := httpapi.Options{Logger: h.opts.Logger, Metrics: h.metrics}
	if h.remote != nil {
		api.Remote, api.LeaseTTL = h.svc, h.svc.Config().LeaseTTL
	}
	srv := &http.Server{
		Handler:           httpapi.New(h.svc, auth.NewAuthenticator(h.st).WithCache(2*time.Second, h.clock), api),
		ReadHeaderTimeout: 10 * time.Second,
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		<-served
	}, nil
}
