// Package tenantlimits changes a tenant's in-flight limit, dispatch weight
// and storage quota, for the admin API and the CLI alike: only the fields given
// change, and a missing tenant is created with the server's default limit.
//
//	limit := 20
//	t, err := tenantlimits.Apply(ctx, st, &tenantlimits.Change{
//		Now: now, Tenant: "acme", MaxInFlight: &limit, DefaultMaxInFlight: 1000,
//	})
package tenantlimits

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/auth"
	"github.com/docket-dev/docket/internal/store"
)

// MaxValue bounds a limit or a weight (the databases store 32-bit integers).
const MaxValue = math.MaxInt32

// Store is what Apply needs from the store.
type Store interface {
	EnsureTenant(ctx context.Context, params *store.EnsureTenantParams) (bool, error)
	GetTenant(ctx context.Context, id string) (*store.Tenant, error)
	UpdateTenant(ctx context.Context, params *store.UpdateTenantParams) (*store.Tenant, error)
}

// Change is a change of one tenant's limits. Nil fields keep their value.
type Change struct {
	Now         time.Time
	Tenant      string
	MaxInFlight *int // most non-terminal tasks; 0: unlimited
	Weight      *int // dispatch weight, >= 1
	// StorageQuota is the tenant's own storage quota in bytes (0:
	// unlimited); store.NoStorageQuota removes it (the server's default
	// applies again).
	StorageQuota *int64
	// DefaultMaxInFlight is the limit of a tenant this change creates.
	DefaultMaxInFlight int
}

// Validate checks the change; its error is a *dockettype.Error with code
// invalid_request.
func (c *Change) Validate() error {
	invalid := func(msg string) error { return dockettype.NewError(dockettype.CodeInvalidRequest, msg) }
	if !auth.ValidName(c.Tenant) {
		return invalid("the tenant must be 1-64 characters of [A-Za-z0-9._@-]")
	}
	if c.MaxInFlight != nil && (*c.MaxInFlight < 0 || *c.MaxInFlight > MaxValue) {
		return invalid(fmt.Sprintf("max_in_flight must be between 0 (unlimited) and %d", MaxValue))
	}
	if c.Weight != nil && (*c.Weight < 1 || *c.Weight > MaxValue) {
		return invalid(fmt.Sprintf("weight must be between 1 and %d", MaxValue))
	}
	if c.StorageQuota != nil && *c.StorageQuota < 0 && *c.StorageQuota != store.NoStorageQuota {
		return invalid("storage_quota_bytes must be >= 0 (0: unlimited), or null for the server's default")
	}
	if c.DefaultMaxInFlight < 0 {
		return invalid("the default in-flight limit must be >= 0")
	}
	return nil
}

// Apply creates the tenant when it is missing (with DefaultMaxInFlight and
// weight 1), then changes the fields the change gives in one statement,
// keeping the others. It returns the tenant as it is afterwards.
func Apply(ctx context.Context, st Store, c *Change) (*store.Tenant, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if _, err := st.EnsureTenant(ctx, &store.EnsureTenantParams{Now: c.Now, ID: c.Tenant, DefaultMaxInFlight: c.DefaultMaxInFlight}); err != nil {
		return nil, fmt.Errorf("create tenant: %w", err)
	}
	if c.MaxInFlight == nil && c.Weight == nil && c.StorageQuota == nil {
		t, err := st.GetTenant(ctx, c.Tenant)
		if err != nil {
			return nil, fmt.Errorf("read tenant: %w", err)
		}
		return t, nil
	}
	t, err := st.UpdateTenant(ctx, &store.UpdateTenantParams{Now: c.Now, Tenant: c.Tenant, MaxInFlight: c.MaxInFlight, Weight: c.Weight,
		StorageQuota: c.StorageQuota})
	if err != nil {
		return nil, fmt.Errorf("update tenant: %w", err)
	}
	return t, nil
}
