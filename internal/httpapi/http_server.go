package httpapi

import (
	"log"
	"net/http"
	"time"
)

// Timeouts and bounds of the *http.Server NewServer returns.
const (
	// ReadHeaderTimeout: a client has this long to send its headers (near
	// the connection cap, a ConnLimiter closes a connection without them
	// after NoHeaderGrace when a new one needs its slot).
	ReadHeaderTimeout = 5 * time.Second
	// WriteTimeout bounds a whole exchange after the headers: the body
	// (itself bounded by Options.BodyTimeout), the longest long poll, and
	// writing the answer.
	WriteTimeout = MaxWait + 30*time.Second
	// IdleTimeout closes a kept-alive connection that sends nothing (near
	// the connection cap, NearCapIdleTimeout).
	IdleTimeout = 60 * time.Second
	// MaxHeaderBytes bounds the request line and headers.
	MaxHeaderBytes = 64 << 10
)

// NewServer returns the *http.Server that serves h with Docket's timeouts.
// It sets no ReadTimeout: that deadline would also cut long polls short
// (Go cancels a request whose connection read times out), so the body has
// its own deadline (Options.BodyTimeout). Serve it on a ConnLimiter
// attached to it (ConnLimiter.Attach).
func NewServer(h http.Handler, errorLog *log.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: ReadHeaderTimeout,
		WriteTimeout:      WriteTimeout,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
		ErrorLog:          errorLog,
	}
}
