package httpapi_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/httpapi"
	"github.com/docket-dev/docket/internal/httpapi/httpapitest"
	"github.com/docket-dev/docket/internal/logtest"
)

// storageAnswer is the storage part of a tenant in the admin API.
type storageAnswer struct {
	ID                  string `json:"id"`
	StorageQuotaBytes   int64  `json:"storage_quota_bytes"`
	StorageQuotaDefault bool   `json:"storage_quota_default"`
	StorageBytes        int64  `json:"storage_bytes"`
}

// A tenant's storage quota refuses single and batch submissions that would
// take its stored bytes over it (429 storage_quota_exceeded), an admin
// lifts or changes it per tenant, and the stats show the bytes kept.
func TestStorageQuota(t *testing.T) {
	t.Parallel()
	httpapitest.ForEachDatabase(t, func(t *testing.T, db httpapitest.Database) {
		t.Parallel()
		var compact bytes.Buffer
		if err := json.Compact(&compact, []byte(`{"msg":"`+logtest.Canary+`","n":[1,2]}`)); err != nil {
			t.Fatal(err)
		}
		size := int64(compact.Len()) // what echoBody's input keeps
		quota := 2*size + 1
		cfg := queuedOnly
		cfg.StorageQuota = quota
		cfg.CleanerInterval = 90 * time.Second
		s := httpapitest.New(t, httpapitest.Options{Store: db.Open(t), Queue: cfg,
			API: httpapi.Options{DefaultStorageQuota: quota}})
		admin := s.NewAdminKeyFor(t, "ops", "root")

		mustSubmit(t, s.URL, s.Key, "k1", echoBody)
		mustSubmit(t, s.URL, s.Key, "k2", echoBody)
		r := submit(t, s.URL, s.Key, "k3", echoBody)
		r.wantError(t, http.StatusTooManyRequests, dockettype.CodeStorageQuotaExceeded)
		if got := r.header.Get("Retry-After"); got != "90" {
			t.Errorf("Retry-After = %q, want the cleaner interval, 90", got)
		}
		// A replay is not a new task: still answered.
		submit(t, s.URL, s.Key, "k1", echoBody).wantStatus(t, http.StatusOK)

		// In a batch each item is judged on its own, in order.
		small := `"workflow":"demo.echo","input":1`
		ans := batchAnswer{}
		postBatch(t, s.URL, s.Key, batchOf(`{"idempotency_key":"b1",`+echoBody[1:], `{"idempotency_key":"b2",`+small+`}`)).decode(t, &ans)
		if len(ans.Results) != 2 || ans.Results[0].Status != http.StatusTooManyRequests || ans.Results[0].Error == nil ||
			ans.Results[0].Error.Code != dockettype.CodeStorageQuotaExceeded || ans.Results[1].Status != http.StatusCreated {
			t.Fatalf("batch results = %+v, want 429 storage_quota_exceeded then 201", ans.Results)
		}

		stats := func() storageAnswer {
			t.Helper()
			var body struct {
				Tenants []storageAnswer `json:"tenants"`
			}
			call(t, s.URL, request{method: http.MethodGet, path: "/v1/admin/stats", key: admin}).decode(t, &body)
			for _, ten := range body.Tenants {
				if ten.ID == httpapitest.Tenant {
					return ten
				}
			}
			t.Fatalf("stats without tenant %s", httpapitest.Tenant)
			return storageAnswer{}
		}
		if got, want := stats(), (storageAnswer{httpapitest.Tenant, quota, true, 2*size + 1}); got != want {
			t.Errorf("stats = %+v, want %+v", got, want)
		}

		patch := func(body string) response {
			return call(t, s.URL, request{method: http.MethodPatch, path: "/v1/admin/tenants/" + httpapitest.Tenant, key: admin, body: body})
		}
		var got storageAnswer
		r = patch(`{"storage_quota_bytes":0}`)
		r.wantStatus(t, http.StatusOK)
		r.decode(t, &got)
		if want := (storageAnswer{httpapitest.Tenant, 0, false, 2*size + 1}); got != want {
			t.Errorf("PATCH storage_quota_bytes 0 = %+v, want %+v", got, want)
		}
		mustSubmit(t, s.URL, s.Key, "k3", echoBody)

		patch(`{"storage_quota_bytes":`+strconv.FormatInt(4*size+1, 10)+`}`).wantStatus(t, http.StatusOK)
		mustSubmit(t, s.URL, s.Key, "k4", echoBody)
		submit(t, s.URL, s.Key, "k5", echoBody).wantError(t, http.StatusTooManyRequests, dockettype.CodeStorageQuotaExceeded)

		r = patch(`{"storage_quota_bytes":null}`)
		r.wantStatus(t, http.StatusOK)
		r.decode(t, &got)
		if want := (storageAnswer{httpapitest.Tenant, quota, true, 4*size + 1}); got != want {
			t.Errorf("PATCH storage_quota_bytes null = %+v, want %+v", got, want)
		}
		for _, bad := range []string{`{"storage_quota_bytes":-1}`, `{"storage_quota_bytes":1.5}`, `{"storage_quota_bytes":"1"}`} {
			patch(bad).wantError(t, http.StatusBadRequest, dockettype.CodeInvalidRequest)
		}
	})
}
