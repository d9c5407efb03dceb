package leasetoken

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"
)

var (
	secret = bytes.Repeat([]byte{7}, 32)
	claims = Claims{TaskID: "01a2332c-4148-7383-aea8-6b3b912c78b8", Tenant: "acme", Pool: "online", Epoch: 3, Attempt: 2, MaxAttempts: 5}
)

func TestRoundTrip(t *testing.T) {
	tok := Sign(secret, "key_a", claims)
	if !strings.HasPrefix(tok, Prefix) {
		t.Fatalf("token %q lacks the prefix %q", tok, Prefix)
	}
	got, err := Verify(secret, "key_a", tok)
	if err != nil || got != claims {
		t.Fatalf("Verify = %+v, %v; want %+v", got, err, claims)
	}
}

// Every way a worker could come by a token it was not given fails.
func TestRefused(t *testing.T) {
	tok := Sign(secret, "key_a", claims)
	raw, _ := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(tok, Prefix))
	flipped := bytes.Clone(raw)
	flipped[len(claims.TaskID)+3] ^= 1 // inside the tenant, then the epoch
	next := claims
	next.Epoch++
	for name, c := range map[string]struct {
		secret []byte
		keyID  string
		token  string
	}{
		"another key":             {secret, "key_b", tok},
		"another installation":    {bytes.Repeat([]byte{8}, 32), "key_a", tok},
		"an altered field":        {secret, "key_a", Prefix + base64.RawURLEncoding.EncodeToString(flipped)},
		"a made-up MAC":           {secret, "key_a", Prefix + base64.RawURLEncoding.EncodeToString(append(encode(next), make([]byte, macLen)...))},
		"a truncated token":       {secret, "key_a", tok[:len(tok)-4]},
		"no prefix":               {secret, "key_a", strings.TrimPrefix(tok, Prefix)},
		"not base64":              {secret, "key_a", Prefix + "!!!"},
		"empty":                   {secret, "key_a", ""},
		"a line break inside":     {secret, "key_a", tok[:10] + "\r\n" + tok[10:]},
		"too long":                {secret, "key_a", Prefix + strings.Repeat("A", maxToken)},
		"the next epoch's fields": {secret, "key_a", Prefix + base64.RawURLEncoding.EncodeToString(append(encode(next), raw[len(raw)-macLen:]...))},
	} {
		if _, err := Verify(c.secret, c.keyID, c.token); err != ErrInvalid {
			t.Errorf("%s: Verify err = %v, want ErrInvalid", name, err)
		}
	}
}

// A valid MAC over malformed fields (only the server could make one) is
// still refused rather than misread.
func TestMalformedBody(t *testing.T) {
	for name, body := range map[string][]byte{
		"empty":          {},
		"no task ID":     encode(Claims{Tenant: "acme"}),
		"trailing bytes": append(encode(claims), 0),
		"short string":   {40, 'a'},
	} {
		tok := Prefix + base64.RawURLEncoding.EncodeToString(append(body, mac(secret, "k", body)...))
		if _, err := Verify(secret, "k", tok); err != ErrInvalid {
			t.Errorf("%s: Verify err = %v, want ErrInvalid", name, err)
		}
	}
}

func FuzzVerify(f *testing.F) {
	f.Add(Sign(secret, "k", claims))
	f.Add(Prefix + "AAAA")
	f.Fuzz(func(t *testing.T, tok string) {
		c, err := Verify(secret, "k", tok)
		if err == nil && Sign(secret, "k", c) != tok {
			t.Fatalf("Verify accepted %q, which Sign does not make from %+v", tok, c)
		}
	})
}

// A token carries the task's trace ID; a token made without one (by an
// earlier version, or for an invalid trace ID) still verifies, with none.
func TestTraceID(t *testing.T) {
	traced := claims
	traced.TraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	got, err := Verify(secret, "key_a", Sign(secret, "key_a", traced))
	if err != nil || got != traced {
		t.Fatalf("Verify = %+v, %v; want %+v", got, err, traced)
	}
	for _, id := range []string{"", "t", "4BF92F3577B34DA6A3CE929D0E0E4736", "4bf92f3577b34da6a3ce929d0e0e473"} {
		c := claims
		c.TraceID = id
		got, err := Verify(secret, "key_a", Sign(secret, "key_a", c))
		if err != nil || got != claims {
			t.Fatalf("trace id %q: Verify = %+v, %v; want %+v", id, got, err, claims)
		}
	}
	// A body with a trace ID cut short is no token.
	c := claims
	c.TraceID = traced.TraceID
	body := encode(c)
	if _, ok := decode(body[:len(body)-1]); ok {
		t.Fatal("a body with 15 bytes of trace ID decoded")
	}
	// An unsampled trace is carried by one more byte, 00; any other is no
	// token.
	unsampled := traced
	unsampled.TraceUnsampled = true
	if got, err := Verify(secret, "key_a", Sign(secret, "key_a", unsampled)); err != nil || got != unsampled {
		t.Fatalf("Verify = %+v, %v; want %+v", got, err, unsampled)
	}
	if _, ok := decode(append(encode(traced), 1)); ok {
		t.Fatal("a body with trace flags 01 decoded")
	}
}

// Peek reads a token's claims without the secret, and refuses what is not
// a token; a forged token peeks fine but still fails Verify.
func TestPeek(t *testing.T) {
	tok := Sign(secret, "key_a", claims)
	if got, ok := Peek(tok); !ok || got != claims {
		t.Fatalf("Peek = %+v, %v; want %+v", got, ok, claims)
	}
	for _, bad := range []string{"", "dkl1.", "dkl1.!!", "xyz." + strings.TrimPrefix(tok, Prefix), tok[:len(tok)-30]} {
		if got, ok := Peek(bad); ok {
			t.Errorf("Peek(%q) = %+v, want refused", bad, got)
		}
	}
	forged := Sign(bytes.Repeat([]byte{9}, 32), "key_a", claims)
	if _, ok := Peek(forged); !ok {
		t.Errorf("a well-formed token of another installation does not peek")
	}
	if _, err := Verify(secret, "key_a", forged); err == nil {
		t.Errorf("a peeked forgery verifies")
	}
}
