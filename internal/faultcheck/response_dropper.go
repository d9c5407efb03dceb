package faultcheck

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// ResponseDropper is an HTTP proxy in front of a server that makes
// ambiguous commits: it forwards a submit, lets the server commit and
// answer, then drops the answer and resets the client's connection. The
// client is told its submit failed although the task exists; it must
// retry with the same key and get the same task. It does the same to
// remote workers' finish calls (SetFinishRate): the outcomes committed,
// the worker hears nothing and sends them again.
type ResponseDropper struct {
	ln        net.Listener
	srv       *http.Server
	target    string // base URL of the server
	transport *http.Transport
	hist      *History
	tenants   map[string]string // API key → tenant

	mu         sync.Mutex
	rng        *rand.Rand
	rate       float64
	finishRate float64
	dropped    int
	finishes   int // finish answers dropped
}

// NewResponseDropper listens on a free loopback port and forwards to
// target (a base URL). Every dropped answer that admitted a task is
// recorded in hist as a fault naming the key and the task. tenants maps
// each API key to its tenant.
func NewResponseDropper(target string, hist *History, tenants map[string]string, seed uint64) (*ResponseDropper, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	d := &ResponseDropper{ln: ln, target: strings.TrimRight(target, "/"), hist: hist, tenants: tenants,
		rng:       rand.New(rand.NewPCG(seed, 0x5eed)),
		transport: &http.Transport{MaxIdleConnsPerHost: 64, ResponseHeaderTimeout: 30 * time.Second}}
	d.srv = &http.Server{Handler: d, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = d.srv.Serve(ln) }()
	return d, nil
}

// URL is the proxy's base URL.
func (d *ResponseDropper) URL() string { return "http://" + d.ln.Addr().String() }

// SetRate sets the share of committed submit answers dropped (0: none).
func (d *ResponseDropper) SetRate(rate float64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.rate = rate
}

// Dropped returns how many committed answers were dropped.
func (d *ResponseDropper) Dropped() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.dropped
}

// SetFinishRate sets the share of committed finish answers (POST
// /v1/worker/finish, 200) dropped (0: none). Each drop is recorded in the
// history as a drop-finish fault.
func (d *ResponseDropper) SetFinishRate(rate float64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.finishRate = rate
}

// DroppedFinishes returns how many committed finish answers were dropped.
func (d *ResponseDropper) DroppedFinishes() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.finishes
}

func (d *ResponseDropper) drop(finish bool) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	rate := d.rate
	if finish {
		rate = d.finishRate
	}
	return rate > 0 && d.rng.Float64() < rate
}

func (d *ResponseDropper) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 32<<20))
	if err != nil {
		http.Error(w, "read body", http.StatusBadGateway)
		return
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, d.target+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, "bad request", http.StatusBadGateway)
		return
	}
	req.Header = r.Header.Clone()
	resp, err := d.transport.RoundTrip(req)
	if err != nil {
		// The server gave no answer: the client gets none either.
		hangUp(w)
		return
	}
	answer, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		hangUp(w)
		return
	}
	submit := r.Method == http.MethodPost && r.URL.Path == "/v1/tasks"
	batch := r.Method == http.MethodPost && r.URL.Path == "/v1/tasks/batch"
	if (submit && resp.StatusCode == http.StatusCreated || batch && resp.StatusCode == http.StatusOK) && d.drop(false) {
		d.recordDrop(r, body, answer, batch)
		hangUp(w)
		return
	}
	if r.Method == http.MethodPost && r.URL.Path == "/v1/worker/finish" && resp.StatusCode == http.StatusOK && d.drop(true) {
		d.mu.Lock()
		d.finishes++
		d.mu.Unlock()
		d.hist.Fault(FaultDropFinish)
		hangUp(w)
		return
	}
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(answer)
}

// recordDrop notes each task the dropped answer admitted: the key that
// made it is bound to it, whatever the client hears next.
func (d *ResponseDropper) recordDrop(r *http.Request, reqBody, answer []byte, batch bool) {
	tenant := d.tenants[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
	note := func(key, taskID string) {
		now := d.hist.clock.Now()
		d.hist.Invoke(Op{Process: -1, Kind: OpFault, Fault: FaultDropResponse, Tenant: tenant, Key: key, TaskID: taskID,
			Outcome: OK, Status: http.StatusCreated, Invoked: now, Complete: now})
	}
	d.mu.Lock()
	d.dropped++
	d.mu.Unlock()
	if !batch {
		var t struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(answer, &t) == nil && t.ID != "" {
			note(r.Header.Get("Idempotency-Key"), t.ID)
		}
		return
	}
	var in struct {
		Tasks []struct {
			Key string `json:"idempotency_key"`
		} `json:"tasks"`
	}
	var out struct {
		Results []struct {
			Status int `json:"status"`
			Task   *struct {
				ID string `json:"id"`
			} `json:"task"`
		} `json:"results"`
	}
	if json.Unmarshal(reqBody, &in) != nil || json.Unmarshal(answer, &out) != nil || len(in.Tasks) != len(out.Results) {
		return
	}
	for i, res := range out.Results {
		if res.Status == http.StatusCreated && res.Task != nil {
			note(in.Tasks[i].Key, res.Task.ID)
		}
	}
}

// hangUp resets the client's connection without an answer.
func hangUp(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// Close stops the proxy.
func (d *ResponseDropper) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := d.srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = d.srv.Close()
	}
	d.transport.CloseIdleConnections()
	return err
}
