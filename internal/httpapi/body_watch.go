package httpapi

import (
	"io"
	"net/http"
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

// stop ends the timer when the handler returns. When the body was not read
// to its end, it also fails the connection's reads: after the handler,
// net/http reads up to 256 KiB of an unread body, at the client's pace and
// whatever the answer's Connection header says, to reuse the connection.
// The answer is written by then; the connection is closed instead.
func (b *bodyWatch) stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ended = true
	b.timer.Stop()
	if !b.complete {
		_ = b.rc.SetReadDeadline(pastDeadline)
	}
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
