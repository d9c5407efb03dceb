// Package auth issues and checks API keys. Keys are random 32-byte secrets
// shown once; only their SHA-256 hash is stored. A key maps to a tenant, a
// principal (the author of every task submitted with it) and a role.
package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jonboulle/clockwork"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// KeyPrefix starts every Docket API key, so a leaked key is recognizable.
const KeyPrefix = "dk_"

// ErrUnauthenticated: no key, an unknown key, or a revoked key.
var ErrUnauthenticated = errors.New("auth: unauthenticated")

// GenerateKey returns a new random API key.
func GenerateKey() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return KeyPrefix + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}

// HashKey returns the stored form of a key.
func HashKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// KeyStore is what auth needs from the store.
type KeyStore interface {
	CreateAPIKey(ctx context.Context, params *store.CreateAPIKeyParams) (*store.APIKey, error)
	LookupAPIKey(ctx context.Context, hash string) (*store.APIKey, error)
}

// CreateKey makes and stores a key for (tenant, principal, role) and
// returns it with its stored record; the key is not recoverable afterwards.
func CreateKey(ctx context.Context, ks KeyStore, now time.Time, tenant, principal string, role dockettype.Role) (string, *store.APIKey, error) {
	return createKey(ctx, ks, now, tenant, principal, role, false)
}

// CreateWorkerKey makes a worker key of tenant: it serves that tenant's
// tasks or, with allTenants, every tenant's (an operator's fleet).
func CreateWorkerKey(ctx context.Context, ks KeyStore, now time.Time, tenant, principal string, allTenants bool) (string, *store.APIKey, error) {
	return createKey(ctx, ks, now, tenant, principal, dockettype.RoleWorker, allTenants)
}

func createKey(ctx context.Context, ks KeyStore, now time.Time, tenant, principal string, role dockettype.Role, allTenants bool) (string, *store.APIKey, error) {
	if !ValidName(tenant) || !ValidName(principal) {
		return "", nil, errors.New("auth: tenant and principal must be 1-64 characters of [A-Za-z0-9._@-]")
	}
	if !role.Valid() {
		return "", nil, errors.New("auth: role must be member, admin or worker")
	}
	key := GenerateKey()
	stored, err := ks.CreateAPIKey(ctx, &store.CreateAPIKeyParams{
		Now: now, ID: "key_" + uuid.Must(uuid.NewV7()).String(), Hash: HashKey(key), Tenant: tenant, Principal: principal, Role: role,
		AllTenants: allTenants,
	})
	if err != nil {
		return "", nil, err
	}
	return key, stored, nil
}

// ValidName reports whether s is an acceptable tenant or principal name.
func ValidName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '@' || c == '-') {
			return false
		}
	}
	return true
}

// Authenticator resolves keys to principals.
type Authenticator struct {
	keys  KeyStore
	cache *keyCache // nil: every request asks the store
}

// NewAuthenticator returns an Authenticator over ks.
func NewAuthenticator(ks KeyStore) *Authenticator { return &Authenticator{keys: ks} }

// WithCache makes a keep the keys it resolved for ttl, so that a busy
// server does not read the store for every request. A revoked key is then
// refused within ttl on every node; Forget refuses it at once on this one.
func (a *Authenticator) WithCache(ttl time.Duration, clock clockwork.Clock) *Authenticator {
	if ttl > 0 {
		a.cache = &keyCache{ttl: ttl, clock: clock, entries: map[string]cachedKey{}}
	}
	return a
}

// Forget drops the cached resolution of the key with this ID (a key this
// node just revoked).
func (a *Authenticator) Forget(keyID string) {
	if a.cache != nil {
		a.cache.forget(keyID)
	}
}

// Authenticate returns the principal of key. It returns ErrUnauthenticated
// for an unknown key and store.ErrUnavailable (wrapped) when the store
// cannot answer.
func (a *Authenticator) Authenticate(ctx context.Context, key string) (dockettype.Principal, error) {
	if !strings.HasPrefix(key, KeyPrefix) || len(key) > 128 {
		return dockettype.Principal{}, ErrUnauthenticated
	}
	hash := HashKey(key)
	if p, ok := a.cache.get(hash); ok {
		return p, nil
	}
	k, err := a.keys.LookupAPIKey(ctx, hash)
	if errors.Is(err, store.ErrNotFound) {
		return dockettype.Principal{}, ErrUnauthenticated
	}
	if err != nil {
		return dockettype.Principal{}, err
	}
	p := dockettype.Principal{Tenant: k.Tenant, Name: k.Principal, Role: k.Role, KeyID: k.ID, AllTenants: k.AllTenants}
	a.cache.put(hash, k.ID, p)
	return p, nil
}

// maxCachedKeys bounds the cache; past it, an entry is dropped at random.
const maxCachedKeys = 10_000

// keyCache remembers resolved keys (by hash) for a short time. Only keys
// the store knows are cached: an unknown key always asks the store.
type keyCache struct {
	ttl     time.Duration
	clock   clockwork.Clock
	mu      sync.Mutex
	entries map[string]cachedKey
}

type cachedKey struct {
	id        string
	principal dockettype.Principal
	expires   time.Time
}

func (c *keyCache) get(hash string) (dockettype.Principal, bool) {
	if c == nil {
		return dockettype.Principal{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[hash]
	if !ok || !c.clock.Now().Before(e.expires) {
		return dockettype.Principal{}, false
	}
	return e.principal, true
}

func (c *keyCache) put(hash, id string, p dockettype.Principal) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= maxCachedKeys {
		for h := range c.entries {
			delete(c.entries, h)
			break
		}
	}
	c.entries[hash] = cachedKey{id: id, principal: p, expires: c.clock.Now().Add(c.ttl)}
}

func (c *keyCache) forget(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for h, e := range c.entries {
		if e.id == id {
			delete(c.entries, h)
		}
	}
}
