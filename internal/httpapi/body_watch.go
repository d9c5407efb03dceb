package httpapi

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
)

// pastDeadline is a read deadline already passed: setting it makes a
// pending read on the connection return at once.
var pastDeadline = time.Unix(1, 0)

// bodyWatch wraps a request body. It cuts the body off when it has not
// arrived within the body timeout (a client trickling bytes cannot hold a
// connection and a goroutine forever), and it records whether the body was
// read to its end: an answer given before that closes the connection
// rather than leave the server to drain the rest.
type bodyWatch struct {
	io.ReadCloser
	rc    *http.ResponseController
	timer clockwork.Timer

	mu       sync.Mutex
	complete bool // read to io.EOF
	ended    bool // read to its end or failed; the timer no longer matters
	cut      bool // cut off by the body timeout
}

// watchBody starts the body timeout of r and returns the body to read
// instead of r.Body.
func (s *server) watchBody(w http.ResponseWriter, r *http.Request) *bodyWatch {
	b := &bodyWatch{ReadCloser: r.Body, rc: http.NewResponseController(w)}
	b.timer = s.clock.AfterFunc(s.bodyTimeout, b.cutOff)
	return b
}

func (b *bodyWatch) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.end(err == io.EOF)
	}
	return n, err
}

// cutOff fails the pending and future reads of the body. (net/http then
// cancels the request's context, as it does when a client leaves; wasCut
// tells the two apart.)
func (b *bodyWatch) cutOff() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.ended {
		b.cut = true
		_ = b.rc.SetReadDeadline(pastDeadline)
	}
}

// end records the end of the body. Once the body is in, the connection has
// no read deadline: the server's background read (which notices a client
// that leaves during a long call) must not time out.
func (b *bodyWatch) end(complete bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ended {
		return
	}
	b.ended, b.complete = true, complete
	b.timer.Stop()
	if complete {
		_ = b.rc.SetReadDeadline(time.Time{})
	}
}

// Lingering after an early answer: how long, and how much of the rest of
// the body, the server reads and discards before it closes the connection.
const (
	lingerTime  = time.Second
	lingerBytes = 1 << 20
)

// stop ends the timer when the handler returns. When the body was not read
// to its end, the answer was given early (an error such as 413, or a body
// refused unread): stop sends it, then lingers, reading and discarding what
// the client still sends for at most lingerTime and lingerBytes, and then
// fails the connection's reads so that it is closed. Closing at once would
// reset a connection the client is still writing its body to, and a client
// that sees the failed write before the answer (Go's net/http does) gets a
// broken pipe instead of the 413. Left alone, net/http would read up to 256
// KiB of the body at the client's pace, with no bound on time, to reuse the
// connection; the answer says "Connection: close" instead.
//
// No lingering when the body was cut off (a trickling client) or when the
// client waits for "100 Continue" before sending it.
func (b *bodyWatch) stop(r *http.Request) {
	b.mu.Lock()
	b.ended = true
	b.timer.Stop()
	linger := !b.complete && !b.cut && !strings.EqualFold(r.Header.Get("Expect"), "100-continue")
	complete := b.complete
	b.mu.Unlock()
	if complete {
		return
	}
	if linger && b.rc.Flush() == nil {
		// A connection deadline is the kernel's clock, not the server's
		// (injected) one.
		if b.rc.SetReadDeadline(time.Now().Add(lingerTime)) == nil {
			_, _ = io.CopyN(io.Discard, b.ReadCloser, lingerBytes)
		}
	}
	_ = b.rc.SetReadDeadline(pastDeadline)
}

// read reports whether the body was read to its end.
func (b *bodyWatch) read() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.complete
}

// wasCut reports whether the body timeout cut the body off.
func (b *bodyWatch) wasCut() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cut
}
