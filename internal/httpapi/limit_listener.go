package httpapi

import (
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/docket-dev/docket/internal/defaults"
)

// DefaultMaxConnections bounds open client connections when the server's
// configuration names no bound.
const DefaultMaxConnections = defaults.MaxConnections

// DefaultMaxConnectionsPerIP bounds the open connections of one remote
// address when ConnLimits.PerIP is 0.
const DefaultMaxConnectionsPerIP = defaults.MaxConnectionsPerIP

// Near the connection cap, connections that hold a slot without a request
// give it up. With the cap reached, a new connection takes the slot of the
// longest idle kept-alive connection, or else of the oldest connection
// that has not sent a complete request header within NoHeaderGrace. Past
// nearCapShare of the cap, kept-alive connections idle for
// NearCapIdleTimeout are closed (IdleTimeout otherwise).
const (
	NoHeaderGrace      = time.Second
	NearCapIdleTimeout = 5 * time.Second
	nearCapShare       = 7.0 / 8
	// recheckEvery is how often an Accept waiting for a slot looks again
	// for a connection it may close.
	recheckEvery = 100 * time.Millisecond
)

// Reasons of docket_http_connections_shed_total.
const (
	shedIdle     = "idle"
	shedNoHeader = "no_header"
	shedPerIP    = "per_ip"
)

// ConnLimits configures a ConnLimiter. The zero value works.
type ConnLimits struct {
	// Max bounds the open connections (<= 0: DefaultMaxConnections).
	Max int
	// PerIP bounds the open connections of one remote address; default
	// DefaultMaxConnectionsPerIP; defaults.Unlimited (< 0): no bound.
	PerIP int
	// Open, when set, counts the open connections; Shed, when set, counts
	// the connections closed or refused, by reason.
	Open prometheus.Gauge
	Shed *prometheus.CounterVec
	// Clock times how long connections have been idle or silent; default
	// the real clock.
	Clock clockwork.Clock
}

// ConnLimiter is a Listener with at most Max connections open at once.
// Accept waits for a free slot before it accepts, so further clients wait
// in the kernel's backlog instead of taking file descriptors the store
// needs. Once Attach has given it the server's connection states, a slot
// cannot be held without a request: near the cap idle and silent
// connections are closed for new ones (see NoHeaderGrace), and one remote
// address holds at most PerIP slots (a connection over it is answered 429
// too_many_requests and closed, unless one of that address's idle
// connections can give way).
type ConnLimiter struct {
	net.Listener
	max, perIP int
	sem        chan struct{} // one token per open connection
	done       chan struct{} // closed by Close
	closeOnce  sync.Once
	open       prometheus.Gauge
	shed       *prometheus.CounterVec
	clock      clockwork.Clock

	mu       sync.Mutex
	tracking bool // Attach was called: states are known
	conns    map[*limitConn]*connInfo
	byIP     map[string]int
	idle     chan struct{} // closed (and replaced) when a connection becomes idle
	refusing chan struct{} // one token per refused connection being answered

	// full, when set (tests), is called when Accept waits for a slot.
	full func()
}

// connInfo is what the limiter knows of an open connection.
type connInfo struct {
	ip    string
	state http.ConnState
	since time.Time // when it entered state
}

// LimitListener returns a ConnLimiter with at most n connections open at
// once (n <= 0: DefaultMaxConnections) and no bound per address. open,
// when not nil, counts the open connections.
func LimitListener(l net.Listener, n int, open prometheus.Gauge) net.Listener {
	return NewConnLimiter(l, ConnLimits{Max: n, PerIP: defaults.Unlimited, Open: open})
}

// NewConnLimiter returns a ConnLimiter over l; Attach it to the server
// that serves it.
func NewConnLimiter(l net.Listener, lim ConnLimits) *ConnLimiter {
	if lim.Max <= 0 {
		lim.Max = DefaultMaxConnections
	}
	if lim.PerIP == 0 {
		lim.PerIP = DefaultMaxConnectionsPerIP
	}
	if lim.Clock == nil {
		lim.Clock = clockwork.NewRealClock()
	}
	return &ConnLimiter{
		Listener: l, max: lim.Max, perIP: lim.PerIP,
		sem: make(chan struct{}, lim.Max), done: make(chan struct{}),
		open: lim.Open, shed: lim.Shed, clock: lim.Clock,
		conns: map[*limitConn]*connInfo{}, byIP: map[string]int{}, idle: make(chan struct{}),
		refusing: make(chan struct{}, maxRefusing),
	}
}

// Attach gives the limiter srv's connection states (srv.ConnState, after
// any hook srv already has). Without it the limiter only caps.
func (l *ConnLimiter) Attach(srv *http.Server) {
	prev := srv.ConnState
	srv.ConnState = func(c net.Conn, st http.ConnState) {
		l.connState(c, st)
		if prev != nil {
			prev(c, st)
		}
	}
	l.mu.Lock()
	l.tracking = true
	l.mu.Unlock()
}

func (l *ConnLimiter) connState(c net.Conn, st http.ConnState) {
	lc, ok := c.(*limitConn)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	info, ok := l.conns[lc]
	if !ok {
		return // closed already
	}
	switch st {
	case http.StateHijacked, http.StateClosed:
		l.forget(lc)
		return
	case http.StateNew:
		return // since its Accept
	}
	info.state, info.since = st, l.clock.Now()
	if st == http.StateIdle {
		close(l.idle)
		l.idle = make(chan struct{})
	}
}

// forget stops tracking c (l.mu held).
func (l *ConnLimiter) forget(c *limitConn) {
	info, ok := l.conns[c]
	if !ok {
		return
	}
	delete(l.conns, c)
	if l.byIP[info.ip]--; l.byIP[info.ip] <= 0 {
		delete(l.byIP, info.ip)
	}
}

// victim picks the connection to close for a new one (l.mu held): the
// longest idle of ip's (any address for ""), else, when silentToo is set, the
// oldest that has had NoHeaderGrace to send its first request header.
func (l *ConnLimiter) victim(ip string, silentToo bool) (*limitConn, string) {
	if !l.tracking {
		return nil, ""
	}
	now := l.clock.Now()
	var idle, silent *limitConn
	var idleSince, silentSince time.Time
	for c, info := range l.conns {
		if ip != "" && info.ip != ip {
			continue
		}
		switch info.state {
		case http.StateIdle:
			if idle == nil || info.since.Before(idleSince) {
				idle, idleSince = c, info.since
			}
		case http.StateNew:
			if silentToo && now.Sub(info.since) >= NoHeaderGrace && (silent == nil || info.since.Before(silentSince)) {
				silent, silentSince = c, info.since
			}
		}
	}
	if idle != nil {
		return idle, shedIdle
	}
	if silent != nil {
		return silent, shedNoHeader
	}
	return nil, ""
}

// evict closes c (not under l.mu: closing gives its slot back).
func (l *ConnLimiter) evict(c *limitConn, reason string) {
	if l.shed != nil {
		l.shed.WithLabelValues(reason).Inc()
	}
	c.Close()
}

// acquire takes a slot, closing a connection that holds one without a
// request when none is free, or reports false when the listener is closed.
func (l *ConnLimiter) acquire() bool {
	for {
		select {
		case l.sem <- struct{}{}:
			return true
		default:
		}
		l.mu.Lock()
		c, reason := l.victim("", true)
		idle := l.idle
		l.mu.Unlock()
		if c != nil {
			l.evict(c, reason)
			continue
		}
		if l.full != nil {
			l.full()
		}
		var recheck <-chan time.Time
		if l.tracking {
			recheck = l.clock.After(recheckEvery)
		}
		select {
		case <-l.done:
			return false
		case l.sem <- struct{}{}:
			return true
		case <-idle:
		case <-recheck:
		}
	}
}

// release counts the connection closed before it gives its slot back, so
// that the gauge never reads above the cap: a connection accepted into the
// freed slot is counted only after this one is no longer.
func (l *ConnLimiter) release(c *limitConn) {
	l.mu.Lock()
	l.forget(c)
	l.mu.Unlock()
	if l.open != nil {
		l.open.Dec()
	}
	<-l.sem
}

// Accept waits for a free slot, then accepts. Once attached, it accepts
// first and then finds the connection a slot: a connection gives way only
// to one that has arrived (at most one connection past the cap is open,
// waiting for its slot).
func (l *ConnLimiter) Accept() (net.Conn, error) {
	for {
		l.mu.Lock()
		tracking := l.tracking
		l.mu.Unlock()
		var c net.Conn
		var err error
		if tracking {
			if c, err = l.Listener.Accept(); err != nil {
				return nil, err
			}
			if !l.acquire() {
				c.Close()
				return nil, net.ErrClosed
			}
		} else {
			if !l.acquire() {
				// Closed while waiting: the inner Accept fails at once.
				c, err := l.Listener.Accept()
				if err == nil {
					c.Close()
				}
				return nil, err
			}
			if c, err = l.Listener.Accept(); err != nil {
				<-l.sem
				return nil, err
			}
		}
		if l.open != nil {
			l.open.Inc()
		}
		lc := &limitConn{Conn: c}
		lc.release = func() { l.release(lc) }
		if l.admit(lc) {
			return lc, nil
		}
	}
}

// admit tracks a new connection, or closes it when its address holds
// PerIP connections none of which is idle. Past nearCapShare of the cap,
// it also closes the connections idle for NearCapIdleTimeout.
func (l *ConnLimiter) admit(c *limitConn) bool {
	ip := remoteIP(c)
	var victims []*limitConn
	refuse := false
	l.mu.Lock()
	if l.perIP > 0 && l.byIP[ip] >= l.perIP {
		if v, _ := l.victim(ip, false); v != nil {
			victims = append(victims, v)
		} else {
			refuse = true
		}
	}
	if !refuse {
		l.conns[c] = &connInfo{ip: ip, state: http.StateNew, since: l.clock.Now()}
		l.byIP[ip]++
		if l.tracking && float64(len(l.conns)) >= nearCapShare*float64(l.max) {
			now := l.clock.Now()
			for other, info := range l.conns {
				if info.state == http.StateIdle && now.Sub(info.since) >= NearCapIdleTimeout {
					victims = append(victims, other)
				}
			}
		}
	}
	l.mu.Unlock()
	for _, v := range victims {
		l.evict(v, shedIdle)
	}
	if refuse {
		if l.shed != nil {
			l.shed.WithLabelValues(shedPerIP).Inc()
		}
		c.once.Do(c.release) // the slot is free at once, answered or not
		l.refuse(c.Conn)
		return false
	}
	return true
}

// refusedAnswer is written to a connection over the per-address cap.
var refusedAnswer = func() string {
	body := `{"error":{"code":"too_many_requests","message":"too many connections from this address; retry later"}}`
	return "HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\nRetry-After: 1\r\n" +
		"Connection: close\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
}()

// maxRefusing bounds the refused connections being answered at once; past
// it, a refused connection is closed without an answer.
const maxRefusing = 64

// refuse answers a connection over the per-address cap with 429
// too_many_requests and closes it, in the background and within a second:
// it sends the answer, stops writing and reads what the client sent until
// the client closes, so that closing with unread data does not reset the
// connection before the client has read the answer.
func (l *ConnLimiter) refuse(c net.Conn) {
	select {
	case l.refusing <- struct{}{}:
	default:
		c.Close()
		return
	}
	go func() {
		defer func() { <-l.refusing }()
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(time.Second)) // a socket deadline is wall-clock time, not the service's clock
		if _, err := io.WriteString(c, refusedAnswer); err != nil {
			return
		}
		if cw, ok := c.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(c, 64<<10))
	}()
}

// remoteIP is the address part of c's remote address.
func remoteIP(c net.Conn) string {
	addr := c.RemoteAddr()
	if addr == nil {
		return ""
	}
	if host, _, err := net.SplitHostPort(addr.String()); err == nil {
		return host
	}
	return addr.String()
}

func (l *ConnLimiter) Close() error {
	err := l.Listener.Close()
	l.closeOnce.Do(func() { close(l.done) })
	return err
}

// limitConn gives its slot back when closed (once).
type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
