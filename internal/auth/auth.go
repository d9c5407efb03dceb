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
	"time"

	"github.com/google/uuid"

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
	if !ValidName(tenant) || !ValidName(principal) {
		return "", nil, errors.New("auth: tenant and principal must be 1-64 characters of [A-Za-z0-9._@-]")
	}
	if role != dockettype.RoleMember && role != dockettype.RoleAdmin {
		return "", nil, errors.New("auth: role must be member or admin")
	}
	key := GenerateKey()
	stored, err := ks.CreateAPIKey(ctx, &store.CreateAPIKeyParams{
		Now: now, ID: "key_" + uuid.Must(uuid.NewV7()).String(), Hash: HashKey(key), Tenant: tenant, Principal: principal, Role: role,
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
	keys KeyStore
}

// NewAuthenticator returns an Authenticator over ks.
func NewAuthenticator(ks KeyStore) *Authenticator { return &Authenticator{keys: ks} }

// Authenticate returns the principal of key. It returns ErrUnauthenticated
// for an unknown key and store.ErrUnavailable (wrapped) when the store
// cannot answer.
func (a *Authenticator) Authenticate(ctx context.Context, key string) (dockettype.Principal, error) {
	if !strings.HasPrefix(key, KeyPrefix) || len(key) > 128 {
		return dockettype.Principal{}, ErrUnauthenticated
	}
	k, err := a.keys.LookupAPIKey(ctx, HashKey(key))
	if errors.Is(err, store.ErrNotFound) {
		return dockettype.Principal{}, ErrUnauthenticated
	}
	if err != nil {
		return dockettype.Principal{}, err
	}
	return dockettype.Principal{Tenant: k.Tenant, Name: k.Principal, Role: k.Role}, nil
}
