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

	su.run(t, "UpdateTenant", func(t *testing.T, s store.Store) {
		setLimits(t, s, tenantA, 5, 3) // creates the tenant
		if ten := getTenant(t, s, tenantA); ten.MaxInFlight != 5 || ten.Weight != 3 {
			t.Errorf("tenant = %+v, want MaxInFlight 5 Weight 3", ten)
		}
		// Only the fields given change.
		weight := 2
		ten, err := s.UpdateTenant(t.Context(), &store.UpdateTenantParams{Now: at(0), Tenant: tenantA, Weight: &weight})
		if err != nil || ten.MaxInFlight != 5 || ten.Weight != 2 {
			t.Errorf("UpdateTenant(weight 2) = %+v, %v; want MaxInFlight 5 (kept) Weight 2", ten, err)
		}
		limit := 0
		ten, err = s.UpdateTenant(t.Context(), &store.UpdateTenantParams{Now: at(0), Tenant: tenantA, MaxInFlight: &limit})
		if err != nil || ten.MaxInFlight != 0 || ten.Weight != 2 {
			t.Errorf("UpdateTenant(limit 0) = %+v, %v; want MaxInFlight 0 Weight 2 (kept)", ten, err)
		}
		created, err := s.EnsureTenant(t.Context(), &store.EnsureTenantParams{Now: at(0), ID: tenantA})
		if err != nil || created {
			t.Errorf("EnsureTenant after UpdateTenant = %v, %v; want false (exists)", created, err)
		}
		// A tenant that does not exist is created with defaults for the rest.
		ten, err = s.UpdateTenant(t.Context(), &store.UpdateTenantParams{Now: at(0), Tenant: tenantB, Weight: &weight})
		if err != nil || ten.ID != tenantB || ten.MaxInFlight != 0 || ten.Weight != 2 {
			t.Errorf("UpdateTenant of a new tenant = %+v, %v; want %s unlimited with weight 2", ten, err, tenantB)
		}
		tenants, err := s.ListTenants(t.Context())
		if err != nil || len(tenants) != 2 || tenants[0].ID != tenantA || tenants[1].ID != tenantB {
			t.Errorf("ListTenants = %+v, %v; want %s then %s", tenants, err, tenantA, tenantB)
		}
	})

	su.run(t, "UpdateTenantRefusesBadValues", func(t *testing.T, s store.Store) {
		setLimits(t, s, tenantA, 5, 3)
		zero, negative := 0, -1
		_, err := s.UpdateTenant(t.Context(), &store.UpdateTenantParams{Now: at(0), Tenant: tenantA, Weight: &zero})
		wantErrIs(t, "UpdateTenant with Weight 0", err, store.ErrInvalid)
		_, err = s.UpdateTenant(t.Context(), &store.UpdateTenantParams{Now: at(0), Tenant: tenantA, MaxInFlight: &negative})
		wantErrIs(t, "UpdateTenant with MaxInFlight -1", err, store.ErrInvalid)
		if ten := getTenant(t, s, tenantA); ten.MaxInFlight != 5 || ten.Weight != 3 {
			t.Errorf("tenant after refused updates = %+v, want MaxInFlight 5 Weight 3", ten)
		}
	})

	su.run(t, "APIKeys", func(t *testing.T, s store.Store) {
		created, err := s.CreateAPIKey(t.Context(), &store.CreateAPIKeyParams{
			Now: at(0), ID: "key-1", Hash: "sha256:abc", Tenant: tenantA, Principal: "alice", Role: dockettype.RoleAdmin,
		})
		if err != nil {
			t.Fatalf("CreateAPIKey: %v", err)
		}
		if created.ID != "key-1" || created.Hash != "" || created.Tenant != tenantA || created.RevokedAt != nil {
			t.Errorf("created key = %+v, want key-1 of %s, no hash, not revoked", created, tenantA)
		}
		key, err := s.LookupAPIKey(t.Context(), "sha256:abc")
		if err != nil {
			t.Fatalf("LookupAPIKey: %v", err)
		}
		if key.ID != "key-1" || key.Hash != "sha256:abc" || key.Tenant != tenantA || key.Principal != "alice" || key.Role != dockettype.RoleAdmin {
			t.Errorf("key = %+v, want key-1 hash sha256:abc tenant %s principal alice role admin", key, tenantA)
		}
		wantTime(t, "key CreatedAt", key.CreatedAt, at(0))
		getTenant(t, s, tenantA) // created with the key

		_, err = s.LookupAPIKey(t.Context(), "sha256:unknown")
		wantErrIs(t, "LookupAPIKey of an unknown hash", err, store.ErrNotFound)

		if _, err := s.CreateAPIKey(t.Context(), &store.CreateAPIKeyParams{
			Now: at(time.Second), ID: "key-2", Hash: "sha256:def", Tenant: tenantB, Principal: "bob", Role: dockettype.RoleMember,
		}); err != nil {
			t.Fatalf("CreateAPIKey: %v", err)
		}
		all, err := s.ListAPIKeys(t.Context(), "")
		if err != nil || len(all) != 2 || all[0].ID != "key-1" || all[1].ID != "key-2" || all[0].Hash != "" || all[1].Hash != "" {
			t.Errorf("ListAPIKeys(all) = %+v, %v; want key-1 then key-2, without hashes", all, err)
		}
		own, err := s.ListAPIKeys(t.Context(), tenantB)
		if err != nil || len(own) != 1 || own[0].ID != "key-2" {
			t.Errorf("ListAPIKeys(%s) = %+v, %v; want key-2 only", tenantB, own, err)
		}

		// Revoked keys are refused at once; revoking again changes nothing.
		revoked, err := s.RevokeAPIKey(t.Context(), &store.RevokeAPIKeyParams{Now: at(2 * time.Second), ID: "key-1"})
		if err != nil || revoked.RevokedAt == nil {
			t.Fatalf("RevokeAPIKey = %+v, %v; want the key with RevokedAt", revoked, err)
		}
		wantTimePtr(t, "RevokedAt", revoked.RevokedAt, at(2*time.Second))
		_, err = s.LookupAPIKey(t.Context(), "sha256:abc")
		wantErrIs(t, "LookupAPIKey of a revoked key", err, store.ErrNotFound)
		again, err := s.RevokeAPIKey(t.Context(), &store.RevokeAPIKeyParams{Now: at(3 * time.Second), ID: "key-1"})
		if err != nil {
			t.Fatalf("RevokeAPIKey again: %v", err)
		}
		wantTimePtr(t, "RevokedAt after a second revoke", again.RevokedAt, at(2*time.Second))
		_, err = s.RevokeAPIKey(t.Context(), &store.RevokeAPIKeyParams{Now: at(0), ID: "key-unknown"})
		wantErrIs(t, "RevokeAPIKey of an unknown key", err, store.ErrNotFound)
	})
}
