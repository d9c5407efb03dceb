// Package leasetoken makes and checks the lease tokens of remote workers.
//
// A token names one claim of one task: the task, its tenant and pool, the
// lease epoch, the attempt with its budget, and the task's trace ID, followed by a MAC over them and
// the ID of the API key that claimed. The MAC is keyed with a secret of the
// installation (stored once in the database, shared by every node), so a
// worker cannot make a token for another task or epoch, alter one, or
// present one with another key: each of those fails Verify, and the write
// it carried is refused as a stale lease would be. The fields it carries
// are then trusted as the server wrote them at claim time (the attempt and
// its budget decide whether a failure is retried).
//
//	tok := leasetoken.Sign(key, keyID, leasetoken.Claims{TaskID: id, Tenant: "acme", Epoch: 3, Attempt: 1, MaxAttempts: 3})
//	c, err := leasetoken.Verify(key, keyID, tok) // err is ErrInvalid for any other key ID or an altered token
package leasetoken

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"strings"
)

// Prefix starts every token (the "1" is the format's version).
const Prefix = "dkl1."

// macLen is the length of the MAC kept in a token: 128 bits.
const macLen = 16

// maxToken bounds what Verify reads: a token is a task ID, a tenant and a
// few numbers.
const maxToken = 1024

// ErrInvalid: the token was not made by this installation for this key
// (altered, forged, or presented by another key), or is malformed.
var ErrInvalid = errors.New("leasetoken: invalid lease token")

// Claims are the facts a token carries.
type Claims struct {
	TaskID      string
	Tenant      string
	Pool        string
	Epoch       int64
	Attempt     int
	MaxAttempts int
	// TraceID is the task's W3C trace ID (32 lowercase hex digits), so
	// that the spans of a remote finish join the task's trace; "" in
	// tokens made before it was carried, or when it is not a valid one.
	TraceID string
	// TraceUnsampled: the task's trace is not sampled, so the spans of a
	// remote finish are not recorded (a token that carries no flag, made
	// before it was carried, is of a sampled trace).
	TraceUnsampled bool
}

// Sign returns the token of c for the key that claimed (keyID).
func Sign(secret []byte, keyID string, c Claims) string {
	body := encode(c)
	return Prefix + base64.RawURLEncoding.EncodeToString(append(body, mac(secret, keyID, body)...))
}

// Verify checks token against the key that presents it and returns what it
// carries.
func Verify(secret []byte, keyID, token string) (Claims, error) {
	if len(token) > maxToken || !strings.HasPrefix(token, Prefix) {
		return Claims{}, ErrInvalid
	}
	enc := token[len(Prefix):]
	raw, err := base64.RawURLEncoding.DecodeString(enc)
	// The decoder skips line breaks and loose trailing bits: only the one
	// spelling Sign makes is a token.
	if err != nil || len(raw) <= macLen || base64.RawURLEncoding.EncodeToString(raw) != enc {
		return Claims{}, ErrInvalid
	}
	body, sum := raw[:len(raw)-macLen], raw[len(raw)-macLen:]
	if !hmac.Equal(sum, mac(secret, keyID, body)) {
		return Claims{}, ErrInvalid
	}
	c, ok := decode(body)
	if !ok {
		return Claims{}, ErrInvalid
	}
	return c, nil
}

// Peek returns what token carries without checking its MAC: for a process
// that holds a token the server gave it and wants its epoch (the fault
// checker's workers). Nothing it returns is to be trusted.
func Peek(token string) (Claims, bool) {
	if len(token) > maxToken || !strings.HasPrefix(token, Prefix) {
		return Claims{}, false
	}
	raw, err := base64.RawURLEncoding.DecodeString(token[len(Prefix):])
	if err != nil || len(raw) <= macLen {
		return Claims{}, false
	}
	return decode(raw[:len(raw)-macLen])
}

func mac(secret []byte, keyID string, body []byte) []byte {
	h := hmac.New(sha256.New, secret)
	h.Write([]byte(Prefix))
	h.Write(binary.AppendUvarint(nil, uint64(len(keyID))))
	h.Write([]byte(keyID))
	h.Write(body)
	return h.Sum(nil)[:macLen]
}

// encode writes c as length-prefixed strings and varints.
func encode(c Claims) []byte {
	b := make([]byte, 0, 16+len(c.TaskID)+len(c.Tenant))
	b = binary.AppendUvarint(b, uint64(len(c.TaskID)))
	b = append(b, c.TaskID...)
	b = binary.AppendUvarint(b, uint64(len(c.Tenant)))
	b = append(b, c.Tenant...)
	b = binary.AppendUvarint(b, uint64(len(c.Pool)))
	b = append(b, c.Pool...)
	b = binary.AppendUvarint(b, uint64(c.Epoch))
	b = binary.AppendUvarint(b, uint64(c.Attempt))
	b = binary.AppendUvarint(b, uint64(c.MaxAttempts))
	// The trace ID, when valid, is the next 16 bytes, then for a trace
	// that is not sampled one byte of W3C trace flags (00): a token
	// without them (made by an earlier version) still decodes.
	if len(c.TraceID) == 2*traceIDLen && lowerHex(c.TraceID) {
		var raw [traceIDLen]byte
		if _, err := hex.Decode(raw[:], []byte(c.TraceID)); err == nil {
			b = append(b, raw[:]...)
			if c.TraceUnsampled {
				b = append(b, 0)
			}
		}
	}
	return b
}

// traceIDLen is the length of a trace ID in a token's body.
const traceIDLen = 16

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if ch := s[i]; !(ch >= '0' && ch <= '9' || ch >= 'a' && ch <= 'f') {
			return false
		}
	}
	return true
}

func decode(b []byte) (Claims, bool) {
	var c Claims
	str := func() (string, bool) {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return "", false
		}
		s := string(b[k : k+int(n)])
		b = b[k+int(n):]
		return s, true
	}
	num := func() (uint64, bool) {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > 1<<62 {
			return 0, false
		}
		b = b[k:]
		return n, true
	}
	var ok1, ok2, ok3, ok4, ok5, ok6 bool
	var epoch, attempt, maxAttempts uint64
	c.TaskID, ok1 = str()
	c.Tenant, ok2 = str()
	c.Pool, ok6 = str()
	epoch, ok3 = num()
	attempt, ok4 = num()
	maxAttempts, ok5 = num()
	switch {
	case len(b) == traceIDLen:
		c.TraceID, b = hex.EncodeToString(b), nil
	case len(b) == traceIDLen+1 && b[traceIDLen] == 0:
		c.TraceID, c.TraceUnsampled, b = hex.EncodeToString(b[:traceIDLen]), true, nil
	}
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || len(b) != 0 || c.TaskID == "" || attempt > 1<<30 || maxAttempts > 1<<30 {
		return Claims{}, false
	}
	c.Epoch, c.Attempt, c.MaxAttempts = int64(epoch), int(attempt), int(maxAttempts)
	return c, true
}
