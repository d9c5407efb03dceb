package httpapi

import (
	"net"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/docket-dev/docket/internal/defaults"
)

// DefaultMaxConnections bounds open client connections when the server's
// configuration names no bound.
const DefaultMaxConnections = defaults.MaxConnections

// LimitListener returns a Listener with at most n connections open at once
// (n <= 0: DefaultMaxConnections). Accept waits for a free slot before it
// accepts, so further clients wait in the kernel's backlog instead of
// taking file descriptors the store needs. open, when not nil, counts the
// open connections.
func LimitListener(l net.Listener, n int, open prometheus.Gauge) net.Listener {
	if n <= 0 {
		n = DefaultMaxConnections
	}
	return &limitListener{Listener: l, sem: make(chan struct{}, n), done: make(chan struct{}), open: open}
}

type limitListener struct {
	net.Listener
	sem       chan struct{} // one token per open connection
	done      chan struct{} // closed by Close
	closeOnce sync.Once
	open      prometheus.Gauge

	// full, when set (tests), is called when Accept waits for a slot.
	full func()
}

// acquire takes a slot, or reports false when the listener is closed.
func (l *limitListener) acquire() bool {
	select {
	case l.sem <- struct{}{}:
		return true
	default:
	}
	if l.full != nil {
		l.full()
	}
	select {
	case <-l.done:
		return false
	case l.sem <- struct{}{}:
		return true
	}
}

// release counts the connection closed before it gives its slot back, so
// that the gauge never reads above the cap: a connection accepted into the
// freed slot is counted only after this one is no longer.
func (l *limitListener) release() {
	if l.open != nil {
		l.open.Dec()
	}
	<-l.sem
}

func (l *limitListener) Accept() (net.Conn, error) {
	if !l.acquire() {
		// Closed while waiting: the inner Accept fails at once.
		c, err := l.Listener.Accept()
		if err == nil {
			c.Close()
		}
		return nil, err
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	if l.open != nil {
		l.open.Inc()
	}
	return &limitConn{Conn: c, release: l.release}, nil
}

func (l *limitListener) Close() error {
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
