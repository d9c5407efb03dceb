package storetest

import (
	"sync"
	"testing"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// inputBytes is what one newItem keeps.
var inputBytes = int64(len(input))

func (su suite) testStorageQuota(t *testing.T) {
	su.run(t, "CountsInputsResultsAndEvidenceUntilRetention", func(t *testing.T, s store.Store) {
		c := admitClaimed(t, s, at(0), newItem(tenantA))
		wantStored(t, s, tenantA, inputBytes)
		if err := appendEvidence(t, s, at(time.Second), c.Lease(), ruleEvidence...); err != nil {
			t.Fatalf("AppendEvidence: %v", err)
		}
		evidence := int64(len(ruleEvidence[0].Body) + len(ruleEvidence[1].Body))
		wantStored(t, s, tenantA, inputBytes+evidence)
		done := succeed(c.Lease())
		finishOne(t, s, at(2*time.Second), done, true)
		result := int64(len(done.Result))
		wantStored(t, s, tenantA, inputBytes+evidence+result)

		// A stale write and a cancel add nothing; a replay adds nothing.
		finishOne(t, s, at(3*time.Second), done, false)
		queued := newItem(tenantA)
		admitOne(t, s, at(time.Hour), queued)
		if res := admit(t, s, at(time.Hour), retry(queued))[0]; res.Outcome != store.Replayed {
			t.Fatalf("replay: %v, want replayed", res.Outcome)
		}
		if _, err := s.Cancel(t.Context(), &store.CancelParams{Now: at(time.Hour), Tenant: tenantA, TaskID: queued.TaskID}); err != nil {
			t.Fatalf("Cancel: %v", err)
		}
		wantStored(t, s, tenantA, 2*inputBytes+evidence+result)
		wantStored(t, s, tenantB, 0)

		// Retention gives back what the deleted task kept, and only that.
		n, err := s.DeleteFinished(t.Context(), &store.DeleteFinishedParams{Before: at(time.Minute), Limit: 10})
		if err != nil || n != 1 {
			t.Fatalf("DeleteFinished = %d, %v; want the first task", n, err)
		}
		wantStored(t, s, tenantA, inputBytes)
		if n, err := s.DeleteFinished(t.Context(), &store.DeleteFinishedParams{Before: at(2 * time.Hour), Limit: 10}); err != nil || n != 1 {
			t.Fatalf("DeleteFinished = %d, %v; want the cancelled task", n, err)
		}
		wantStored(t, s, tenantA, 0)
	})

	su.run(t, "AdmissionRefusedOverTheQuota", func(t *testing.T, s store.Store) {
		quota := func(it *store.AdmitItem) { it.StorageQuota = 2*inputBytes + 1 }
		admitN(t, s, at(0), tenantA, 2, quota)
		over := newItem(tenantA)
		quota(over)
		if res := admit(t, s, at(time.Second), over)[0]; res.Outcome != store.StorageQuotaExceeded || res.Task != nil {
			t.Fatalf("third input over the quota: %v, want storage_quota_exceeded", res.Outcome)
		}
		_, err := s.GetTask(t.Context(), &store.GetTaskParams{Tenant: tenantA, TaskID: over.TaskID})
		wantErrIs(t, "GetTask of the refused task", err, store.ErrNotFound)
		wantUsage(t, s, dockettype.PoolOnline, 2, tenantA, 2)
		wantStored(t, s, tenantA, 2*inputBytes)

		// A small input still fits in what is left; each item of a batch is
		// judged on its own, in order; another tenant has its own quota.
		small := newItem(tenantA)
		quota(small)
		small.Input = []byte("1")
		other := newItem(tenantB)
		quota(other)
		res := admit(t, s, at(2*time.Second), retry(over), small, other)
		if res[0].Outcome != store.StorageQuotaExceeded || res[1].Outcome != store.Admitted || res[2].Outcome != store.Admitted {
			t.Fatalf("batch: %v %v %v, want storage_quota_exceeded admitted admitted", res[0].Outcome, res[1].Outcome, res[2].Outcome)
		}
		wantStored(t, s, tenantA, 2*inputBytes+1)

		// The tenant's own quota wins over the item's default: 0 lifts it,
		// NoStorageQuota brings the default back.
		setStorageQuota(t, s, tenantA, 0)
		if q := getTenant(t, s, tenantA).StorageQuota; q == nil || *q != 0 {
			t.Fatalf("tenant quota after setting 0: %v, want 0", q)
		}
		fresh := func() *store.AdmitItem {
			it := newItem(tenantA)
			quota(it)
			return it
		}
		admitOne(t, s, at(3*time.Second), fresh())
		setStorageQuota(t, s, tenantA, 4*inputBytes)
		if res := admit(t, s, at(4*time.Second), fresh())[0]; res.Outcome != store.StorageQuotaExceeded {
			t.Fatalf("over the tenant's own quota: %v, want storage_quota_exceeded", res.Outcome)
		}
		setStorageQuota(t, s, tenantA, 5*inputBytes+1)
		admitOne(t, s, at(4*time.Second), fresh())
		setStorageQuota(t, s, tenantA, store.NoStorageQuota)
		if q := getTenant(t, s, tenantA).StorageQuota; q != nil {
			t.Fatalf("tenant quota after removing it: %d, want none", *q)
		}
		wantStored(t, s, tenantA, 4*inputBytes+1)
		if res := admit(t, s, at(5*time.Second), fresh())[0]; res.Outcome != store.StorageQuotaExceeded {
			t.Fatalf("back on the default quota: %v, want storage_quota_exceeded", res.Outcome)
		}
	})

	su.run(t, "ResultsAreWrittenOverTheQuota", func(t *testing.T, s store.Store) {
		it := newItem(tenantA)
		it.StorageQuota = inputBytes // exactly full once admitted
		c := admitClaimed(t, s, at(0), it)
		if err := appendEvidence(t, s, at(time.Second), c.Lease(), ruleEvidence...); err != nil {
			t.Fatalf("AppendEvidence over the quota: %v, want it written", err)
		}
		if got := finishOne(t, s, at(2*time.Second), succeed(c.Lease()), true); got.State != dockettype.StateSucceeded {
			t.Fatalf("finish over the quota: %s, want succeeded", got.State)
		}
		if got := getTask(t, s, tenantA, it.TaskID); string(got.Result) != `{"ok":true}` {
			t.Errorf("result over the quota: %s, want it kept", got.Result)
		}
		next := newItem(tenantA)
		next.StorageQuota = inputBytes
		if res := admit(t, s, at(3*time.Second), next)[0]; res.Outcome != store.StorageQuotaExceeded {
			t.Errorf("admission over the quota: %v, want storage_quota_exceeded", res.Outcome)
		}
	})

	su.run(t, "ExactUnderConcurrentAdmissions", func(t *testing.T, s store.Store) {
		const writers, each, fits = 6, 5, 13
		var wg sync.WaitGroup
		admitted := make([]int, writers)
		for w := range writers {
			f := fork(t, s, "quota", 1)
			wg.Go(func() {
				for range each {
					it := newItem(tenantA)
					it.StorageQuota = fits * inputBytes
					res, err := f.Admit(t.Context(), &store.AdmitParams{Now: at(0), Items: []*store.AdmitItem{it}})
					if err != nil {
						t.Errorf("Admit: %v", err)
						return
					}
					switch res[0].Outcome {
					case store.Admitted:
						admitted[w]++
					case store.StorageQuotaExceeded:
					default:
						t.Errorf("Admit: %v, want admitted or storage_quota_exceeded", res[0].Outcome)
					}
				}
			})
		}
		wg.Wait()
		total := 0
		for _, n := range admitted {
			total += n
		}
		if total != fits {
			t.Errorf("%d admitted under a quota of %d inputs, want exactly %d", total, fits, fits)
		}
		wantStored(t, s, tenantA, fits*inputBytes)
	})
}

// wantStored checks a tenant's stored bytes as GetTenant, ListTenants and
// Stats read them (0 for a tenant that does not exist).
func wantStored(t *testing.T, s store.Store, tenant string, want int64) {
	t.Helper()
	ten, err := s.GetTenant(t.Context(), tenant)
	switch {
	case err == nil:
		if ten.StoredBytes != want {
			t.Errorf("GetTenant(%s).StoredBytes = %d, want %d", tenant, ten.StoredBytes, want)
		}
	case want != 0:
		t.Fatalf("GetTenant(%s): %v", tenant, err)
	}
	st, err := s.Stats(t.Context())
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	for _, ten := range st.Tenants {
		if ten.ID == tenant && ten.StoredBytes != want {
			t.Errorf("Stats tenant %s StoredBytes = %d, want %d", tenant, ten.StoredBytes, want)
		}
	}
}

func setStorageQuota(t *testing.T, s store.Store, tenant string, quota int64) {
	t.Helper()
	if _, err := s.UpdateTenant(t.Context(), &store.UpdateTenantParams{Now: base, Tenant: tenant, StorageQuota: &quota}); err != nil {
		t.Fatalf("UpdateTenant(%s, storage quota %d): %v", tenant, quota, err)
	}
}
