package faultcheck

import (
	"net"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
)

// TCPProxy forwards TCP connections from its own loopback address to a
// target, and injects faults into them on demand: it resets connections
// (RST, mid-stream) and stalls them (no byte forwarded either way for a
// while). Between a server and PostgreSQL it cuts submits, claims,
// heartbeats and finishes in the middle; between clients and a server, HTTP
// calls.
type TCPProxy struct {
	ln     net.Listener
	target string
	clock  clockwork.Clock // ends stalls
	done   chan struct{}   // closed by Close

	mu      sync.Mutex
	conns   map[*proxyPair]struct{}
	gate    chan struct{} // closed while traffic flows; open during a stall
	stallTo clockwork.Timer
	closed  bool
	resets  int
	stalls  int
	wg      sync.WaitGroup
}

type proxyPair struct {
	client, server net.Conn
	done           chan struct{} // closed with the pair
	once           sync.Once
}

// close closes both ends; with rst, as a reset (SO_LINGER 0) rather than
// an orderly close.
func (p *proxyPair) close(rst bool) {
	p.once.Do(func() {
		close(p.done)
		for _, c := range []net.Conn{p.client, p.server} {
			if c == nil {
				continue
			}
			if tc, ok := c.(*net.TCPConn); ok && rst {
				_ = tc.SetLinger(0)
			}
			_ = c.Close()
		}
	})
}

// NewTCPProxy listens on a free loopback port and forwards to target.
func NewTCPProxy(target string, clock clockwork.Clock) (*TCPProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	flowing := make(chan struct{})
	close(flowing)
	p := &TCPProxy{ln: ln, target: target, clock: clock, done: make(chan struct{}), conns: map[*proxyPair]struct{}{}, gate: flowing}
	p.wg.Go(p.accept)
	return p, nil
}

// Addr is the proxy's address (host:port).
func (p *TCPProxy) Addr() string { return p.ln.Addr().String() }

func (p *TCPProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Go(func() { p.serve(c) })
	}
}

func (p *TCPProxy) serve(c net.Conn) {
	pair := &proxyPair{client: c, done: make(chan struct{})}
	// A connection opened during a stall waits for it to end.
	if !p.wait(pair) {
		pair.close(true)
		return
	}
	s, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		pair.close(true)
		return
	}
	pair.server = s
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		pair.close(true)
		return
	}
	p.conns[pair] = struct{}{}
	p.mu.Unlock()
	var wg sync.WaitGroup
	wg.Go(func() { p.pipe(pair, c, s) })
	wg.Go(func() { p.pipe(pair, s, c) })
	wg.Wait()
	p.mu.Lock()
	delete(p.conns, pair)
	p.mu.Unlock()
}

// pipe copies src to dst, holding every chunk while the proxy stalls. The
// end of either stream ends the pair.
func (p *TCPProxy) pipe(pair *proxyPair, src, dst net.Conn) {
	defer pair.close(false)
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.wait(pair) {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// wait blocks while the proxy stalls; false when the pair or the proxy
// closed meanwhile.
func (p *TCPProxy) wait(pair *proxyPair) bool {
	for {
		p.mu.Lock()
		gate := p.gate
		p.mu.Unlock()
		select {
		case <-gate:
			select {
			case <-pair.done:
				return false
			default:
				return true
			}
		case <-pair.done:
			return false
		case <-p.done:
			return false
		}
	}
}

// ResetAll resets every open connection and returns how many it reset.
func (p *TCPProxy) ResetAll() int {
	p.mu.Lock()
	pairs := make([]*proxyPair, 0, len(p.conns))
	for c := range p.conns {
		pairs = append(pairs, c)
	}
	p.resets += len(pairs)
	p.mu.Unlock()
	for _, c := range pairs {
		c.close(true)
	}
	return len(pairs)
}

// ResetOne resets the i-th open connection (modulo their number); false
// when none is open.
func (p *TCPProxy) ResetOne(i int) bool {
	p.mu.Lock()
	var pick *proxyPair
	if n := len(p.conns); n > 0 {
		k := i % n
		for c := range p.conns {
			if k == 0 {
				pick = c
				break
			}
			k--
		}
		p.resets++
	}
	p.mu.Unlock()
	if pick == nil {
		return false
	}
	pick.close(true)
	return true
}

// Stall holds all traffic, and new connections, for d (from now: a stall
// during a stall extends it).
func (p *TCPProxy) Stall(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.stalls++
	select {
	case <-p.gate:
		p.gate = make(chan struct{}) // flowing: stop it
	default:
	}
	if p.stallTo != nil {
		p.stallTo.Stop()
	}
	gate := p.gate
	p.stallTo = p.clock.AfterFunc(d, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.gate == gate {
			closeOnce(gate)
		}
	})
}

// Heal ends a stall at once.
func (p *TCPProxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stallTo != nil {
		p.stallTo.Stop()
		p.stallTo = nil
	}
	closeOnce(p.gate)
}

func closeOnce(c chan struct{}) {
	select {
	case <-c:
	default:
		close(c)
	}
}

// Counts returns how many connections were reset and how many stalls began.
func (p *TCPProxy) Counts() (resets, stalls int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.resets, p.stalls
}

// Close stops the proxy and resets every connection.
func (p *TCPProxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	close(p.done)
	pairs := make([]*proxyPair, 0, len(p.conns))
	for c := range p.conns {
		pairs = append(pairs, c)
	}
	p.mu.Unlock()
	err := p.ln.Close()
	for _, c := range pairs {
		c.close(true)
	}
	p.Heal()
	p.wg.Wait()
	return err
}
