package auth

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// memKeys is an in-memory KeyStore that counts lookups.
type memKeys struct {
	keys    map[string]*store.APIKey // by hash
	lookups atomic.Int64
}

func (m *memKeys) CreateAPIKey(_ context.Context, p *store.CreateAPIKeyParams) (*store.APIKey, error) {
	k := &store.APIKey{ID: p.ID, Hash: p.Hash, Tenant: p.Tenant, Principal: p.Principal, Role: p.Role, CreatedAt: p.Now}
	m.keys[p.Hash] = k
	return k, nil
}

func (m *memKeys) LookupAPIKey(_ context.Context, hash string) (*store.APIKey, error) {
	m.lookups.Add(1)
	k, ok := m.keys[hash]
	if !ok || k.RevokedAt != nil {
		return nil, store.ErrNotFound
	}
	return k, nil
}

func (m *memKeys) revoke(id string, now time.Time) {
	for _, k := range m.keys {
		if k.ID == id {
			k.RevokedAt = &now
		}
	}
}

func TestCachedKeyIsRefusedWithinTheTTLAfterRevocation(t *testing.T) {
	ctx := context.Background()
	clock := clockwork.NewFakeClock()
	ks := &memKeys{keys: map[string]*store.APIKey{}}
	key, stored, err := CreateKey(ctx, ks, clock.Now(), "acme", "alice", dockettype.RoleMember)
	if err != nil {
		t.Fatal(err)
	}
	a := NewAuthenticator(ks).WithCache(2*time.Second, clock)
	for range 3 {
		if p, err := a.Authenticate(ctx, key); err != nil || p.Tenant != "acme" || p.Name != "alice" {
			t.Fatalf("Authenticate = %+v, %v", p, err)
		}
	}
	if n := ks.lookups.Load(); n != 1 {
		t.Fatalf("%d store lookups for three requests within the TTL, want 1", n)
	}

	// Revoked on another node: still accepted here until the entry ages out.
	ks.revoke(stored.ID, clock.Now())
	if _, err := a.Authenticate(ctx, key); err != nil {
		t.Fatalf("within the TTL: %v, want the cached principal", err)
	}
	clock.Advance(2 * time.Second)
	if _, err := a.Authenticate(ctx, key); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("after the TTL: %v, want unauthenticated", err)
	}
}

func TestForgetRefusesAKeyAtOnce(t *testing.T) {
	ctx := context.Background()
	clock := clockwork.NewFakeClock()
	ks := &memKeys{keys: map[string]*store.APIKey{}}
	key, stored, err := CreateKey(ctx, ks, clock.Now(), "acme", "alice", dockettype.RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	a := NewAuthenticator(ks).WithCache(time.Hour, clock)
	if _, err := a.Authenticate(ctx, key); err != nil {
		t.Fatal(err)
	}
	ks.revoke(stored.ID, clock.Now())
	a.Forget(stored.ID) // revoked on this node
	if _, err := a.Authenticate(ctx, key); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("after Forget: %v, want unauthenticated", err)
	}
}

func TestUnknownKeysAreNeverCached(t *testing.T) {
	ctx := context.Background()
	ks := &memKeys{keys: map[string]*store.APIKey{}}
	a := NewAuthenticator(ks).WithCache(time.Hour, clockwork.NewFakeClock())
	for range 2 {
		if _, err := a.Authenticate(ctx, GenerateKey()); !errors.Is(err, ErrUnauthenticated) {
			t.Fatalf("unknown key: %v", err)
		}
	}
	if n := ks.lookups.Load(); n != 2 {
		t.Fatalf("%d lookups for two unknown keys, want 2 (no negative cache)", n)
	}
}
