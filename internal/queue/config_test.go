package queue

import (
	"runtime"
	"testing"
	"time"

	"github.com/docket-dev/docket/internal/defaults"
)

// A zero Config takes the defaults table; Unlimited and NoWorkers keep
// their meaning through setDefaults.
func TestConfigZeroTakesTheDefaults(t *testing.T) {
	t.Parallel()
	var c Config
	if err := c.setDefaults(); err != nil {
		t.Fatal(err)
	}
	cpus := runtime.NumCPU()
	for _, tt := range []struct {
		name      string
		got, want any
	}{
		{"online workers", c.Online.Workers, defaults.OnlineWorkersPerCPU * cpus},
		{"offline workers", c.Offline.Workers, defaults.OfflineWorkersPerCPU * cpus},
		{"online capacity", c.Online.Capacity, defaults.Capacity},
		{"offline capacity", c.Offline.Capacity, defaults.Capacity},
		{"lease TTL", c.LeaseTTL, defaults.LeaseTTL},
		{"heartbeat interval", c.HeartbeatInterval, defaults.LeaseTTL / defaults.HeartbeatsPerLease},
		{"recovery interval", c.RecoveryInterval, defaults.RecoveryInterval},
		{"deadline interval", c.DeadlineInterval, defaults.DeadlineInterval},
		{"retention", c.Retention, defaults.Retention},
		{"cleaner interval", c.CleanerInterval, defaults.CleanerInterval},
		{"default timeout", c.DefaultTimeout, defaults.DefaultTimeout},
		{"shutdown grace", c.ShutdownGrace, defaults.ShutdownGrace},
		{"max result bytes", c.MaxResultBytes, defaults.MaxResultBytes},
	} {
		if tt.got != tt.want {
			t.Errorf("%s = %v, want the default %v", tt.name, tt.got, tt.want)
		}
	}

	u := Config{
		Online:    PoolConfig{Workers: defaults.NoWorkers, Capacity: defaults.Unlimited},
		Retention: defaults.Unlimited,
	}
	if err := u.setDefaults(); err != nil {
		t.Fatal(err)
	}
	if u.Online.Workers != 0 || u.Online.Capacity >= 0 || u.Retention >= 0 {
		t.Errorf("NoWorkers and Unlimited became workers %d, capacity %d, retention %s; want no workers, no bound, no cleaner",
			u.Online.Workers, u.Online.Capacity, u.Retention)
	}
	if u.Retention != time.Duration(defaults.Unlimited) {
		t.Errorf("retention %s, want Unlimited kept as it was given", u.Retention)
	}
}
