package storetest

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/docket-dev/docket/internal/store"
)

// BackfillMarker starts the part of a storage-quota migration that counts
// what existing tenants keep.
const BackfillMarker = "-- What the tenants keep already."

// RunStorageBackfill checks a backend's storage-quota migration counts what
// a database upgraded to it keeps: it writes tasks, results and evidence
// through s, zeroes the stored bytes with exec, runs the migration file's
// counting part with exec, and wants the counts the store kept itself.
func RunStorageBackfill(t *testing.T, s store.Store, migrationFile string, exec func(ctx context.Context, sql string) error) {
	t.Helper()
	c := admitClaimed(t, s, at(0), newItem(tenantA))
	if err := appendEvidence(t, s, at(time.Second), c.Lease(), ruleEvidence...); err != nil {
		t.Fatalf("AppendEvidence: %v", err)
	}
	finishOne(t, s, at(2*time.Second), succeed(c.Lease()), true)
	admitOne(t, s, at(3*time.Second), newItem(tenantA))
	admitOne(t, s, at(3*time.Second), newItem(tenantB))
	want := map[string]int64{tenantA: getTenant(t, s, tenantA).StoredBytes, tenantB: getTenant(t, s, tenantB).StoredBytes}
	if want[tenantA] == 0 || want[tenantB] != inputBytes {
		t.Fatalf("stored bytes before the reset: %v", want)
	}

	body, err := os.ReadFile(migrationFile)
	if err != nil {
		t.Fatal(err)
	}
	_, backfill, ok := strings.Cut(string(body), BackfillMarker)
	if _, backfill, ok = strings.Cut(backfill, "\n"); !ok { // the rest of the marker's comment line
		t.Fatalf("%s has no %q part", migrationFile, BackfillMarker)
	}
	if err := exec(t.Context(), "UPDATE counters SET bytes = 0"); err != nil {
		t.Fatal(err)
	}
	wantStored(t, s, tenantA, 0)
	if err := exec(t.Context(), backfill); err != nil {
		t.Fatalf("backfill: %v", err)
	}
	for tenant, n := range want {
		wantStored(t, s, tenant, n)
	}
}
