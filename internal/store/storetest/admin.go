package storetest

import (
	"testing"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

func (su suite) testAdmin(t *testing.T) {
	su.run(t, "EnsureTenant", func(t *testing.T, s store.Store) {
		for i, want := range []bool{true, false} {
			created, err := s.EnsureTenant(t.Context(), &store.EnsureTenantParams{Now: at(time.Duration(i) * time.Second), ID: tenantA})
			if err != nil {
				t.Fatalf("EnsureTenant call %d: %v", i+1, err)
			}
			if created != want {
				t.Errorf("EnsureTenant call %d: created = %v, want %v", i+1, created, want)
			}
		}
		ten := getTenant(t, s, tenantA)
		if ten.ID != tenantA || ten.MaxInFlight != 0 || ten.Weight != 1 || ten.InFlight != 0 {
			t.Errorf("tenant = %+v, want %s unlimited with weight 1 and nothing in flight", ten, tenantA)
		}
		wantTime(t, "tenant CreatedAt", ten.CreatedAt, at(0))

		_, err := s.GetTenant(t.Context(), "nobody")
		wantErrIs(t, "GetTenant of an unknown tenant", err, store.ErrNotFound)
	})

	su.run(t, "EnsureTenantDefaultLimit", func(t *testing.T, s store.Store) {
		created, err := s.EnsureTenant(t.Context(), &store.EnsureTenantParams{Now: at(0), ID: tenantA, DefaultMaxInFlight: 7})
		if err != nil || !created {
			t.Fatalf("EnsureTenant = %v, %v; want created", created, err)
		}
		if ten := getTenant(t, s, tenantA); ten.MaxInFlight != 7 || ten.Weight != 1 {
			t.Errorf("new tenant = %+v, want MaxInFlight 7 (the default given) and Weight 1", ten)
		}
		setLimits(t, s, tenantB, 0, 1) // explicitly unlimited
		if created, err := s.EnsureTenant(t.Context(), &store.EnsureTenantParams{Now: at(0), ID: tenantB, DefaultMaxInFlight: 7}); err != nil || created {
			t.Fatalf("EnsureTenant of an existing tenant = %v, %v; want not created", created, err)
		}
		if ten := getTenant(t, s, tenantB); ten.MaxInFlight != 0 {
			t.Errorf("existing tenant = %+v, want its own limit (0) kept", ten)
		}
		_, err = s.EnsureTenant(t.Context(), &store.EnsureTenantParams{Now: at(0), ID: "initech", DefaultMaxInFlight: -1})
		wantErrIs(t, "EnsureTenant with a negative default", err, store.ErrInvalid)
	})

	su.run(t, "SetTenantLimits", func(t *testing.T, s store.Store) {
		setLimits(t, s, tenantA, 5, 3) // creates the tenant
		if ten := getTenant(t, s, tenantA); ten.MaxInFlight != 5 || ten.Weight != 3 {
			t.Errorf("tenant = %+v, want MaxInFlight 5 Weight 3", ten)
		}
		setLimits(t, s, tenantA, 0, 2)
		if ten := getTenant(t, s, tenantA); ten.MaxInFlight != 0 || ten.Weight != 2 {
			t.Errorf("tenant after update = %+v, want MaxInFlight 0 Weight 2", ten)
		}
		created, err := s.EnsureTenant(t.Context(), &store.EnsureTenantParams{Now: at(0), ID: tenantA})
		if err != nil || created {
			t.Errorf("EnsureTenant after SetTenantLimits = %v, %v; want false (exists)", created, err)
		}
		if ten := getTenant(t, s, tenantA); ten.Weight != 2 {
			t.Errorf("weight after EnsureTenant = %d, want 2 (kept)", ten.Weight)
		}
	})

	su.run(t, "SetTenantLimitsRefusesWeightBelowOne", func(t *testing.T, s store.Store) {
		setLimits(t, s, tenantA, 5, 3)
		err := s.SetTenantLimits(t.Context(), &store.SetTenantLimitsParams{Now: at(0), Tenant: tenantA, MaxInFlight: 1, Weight: 0})
		wantErrIs(t, "SetTenantLimits with Weight 0", err, store.ErrInvalid)
		if ten := getTenant(t, s, tenantA); ten.MaxInFlight != 5 || ten.Weight != 3 {
			t.Errorf("tenant after a refused update = %+v, want MaxInFlight 5 Weight 3", ten)
		}
	})

	su.run(t, "APIKeys", func(t *testing.T, s store.Store) {
		err := s.CreateAPIKey(t.Context(), &store.CreateAPIKeyParams{
			Now: at(0), Hash: "sha256:abc", Tenant: tenantA, Principal: "alice", Role: dockettype.RoleAdmin,
		})
		if err != nil {
			t.Fatalf("CreateAPIKey: %v", err)
		}
		key, err := s.LookupAPIKey(t.Context(), "sha256:abc")
		if err != nil {
			t.Fatalf("LookupAPIKey: %v", err)
		}
		if key.Hash != "sha256:abc" || key.Tenant != tenantA || key.Principal != "alice" || key.Role != dockettype.RoleAdmin {
			t.Errorf("key = %+v, want hash sha256:abc tenant %s principal alice role admin", key, tenantA)
		}
		wantTime(t, "key CreatedAt", key.CreatedAt, at(0))
		getTenant(t, s, tenantA) // created with the key

		_, err = s.LookupAPIKey(t.Context(), "sha256:unknown")
		wantErrIs(t, "LookupAPIKey of an unknown hash", err, store.ErrNotFound)
	})
}
