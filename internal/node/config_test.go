package node

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docket-dev/docket/internal/logtest"
)

// Settings that mean nothing are refused before a database is created.
func TestNewRefusesMeaninglessSettings(t *testing.T) {
	t.Parallel()
	logger, _ := logtest.New(t)
	for _, tt := range []struct {
		cfg  Config
		want string
	}{
		{Config{Mode: "production"}, `mode must be "demo" or "pilot", not "production"`},
		{Config{MaxConnections: -5}, "max connections must be 0 (the default, 4096) or more"},
	} {
		db := filepath.Join(t.TempDir(), "docket.db")
		tt.cfg.DB, tt.cfg.Logger = db, logger
		_, err := New(context.Background(), tt.cfg, Options{})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: error %v, want one saying %q", tt.cfg, err, tt.want)
		}
		if _, err := os.Stat(db); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%+v: the database was created (%v)", tt.cfg, err)
		}
	}
}
