package httpapi

import (
	"crypto/rand"
	"encoding/hex"

	"go.opentelemetry.io/otel/trace"

	"github.com/docket-dev/docket/internal/queue"
)

// A W3C traceparent of version 00 is "00-<32 hex trace id>-<16 hex parent
// id>-<2 hex flags>", lowercase.
const traceparentLen = 55

// parseTraceparent returns the trace ID of the request's traceparent header
// when there is exactly one and it is a valid version-00 value. An invalid
// or repeated header is ignored (the server starts a new trace), as the W3C
// recommendation asks.
func parseTraceparent(values []string) (string, bool) {
	if len(values) != 1 {
		return "", false
	}
	v := values[0]
	if len(v) != traceparentLen || v[0:3] != "00-" || v[35] != '-' || v[52] != '-' {
		return "", false
	}
	traceID, parentID, flags := v[3:35], v[36:52], v[53:55]
	if !lowerHex(traceID) || !lowerHex(parentID) || !lowerHex(flags) {
		return "", false
	}
	if allZero(traceID) || allZero(parentID) {
		return "", false
	}
	return traceID, true
}

// traceparentContext is the caller's span context of a valid traceparent
// (see parseTraceparent), as the parent of the request's server span.
func traceparentContext(values []string) (trace.SpanContext, bool) {
	if _, ok := parseTraceparent(values); !ok {
		return trace.SpanContext{}, false
	}
	v := values[0]
	tid, err1 := trace.TraceIDFromHex(v[3:35])
	sid, err2 := trace.SpanIDFromHex(v[36:52])
	flags, err3 := hex.DecodeString(v[53:55])
	if err1 != nil || err2 != nil || err3 != nil {
		return trace.SpanContext{}, false
	}
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid,
		TraceFlags: trace.TraceFlags(flags[0]), Remote: true}), true
}

// formatTraceparent returns the response's traceparent: the trace ID with a
// new span ID, and the sampled flag.
func formatTraceparent(traceID string, sampled bool) string {
	flags := "-00"
	if sampled {
		flags = "-01"
	}
	return "00-" + traceID + "-" + newSpanID() + flags
}

func newTraceID() string { return queue.NewTraceID() }

func newSpanID() string {
	var b [8]byte
	for {
		_, _ = rand.Read(b[:])
		if b != [8]byte{} {
			return hex.EncodeToString(b[:])
		}
	}
}

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func allZero(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != '0' {
			return false
		}
	}
	return true
}
