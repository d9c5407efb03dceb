package docket

import (
	"runtime/debug"
	"sync"
)

// version is set at build time:
//
//	go build -ldflags "-X github.com/docket-dev/docket.version=v1.2.0" ./cmd/docket
var version string

var buildVersion = sync.OnceValue(func() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v // a module version, or the VCS pseudo-version go build stamps
	}
	var rev, dirty string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev == "" {
		return "devel"
	}
	return "devel-" + rev + dirty
})

// Version is this build's version: the one set with -ldflags (see above),
// else the module or VCS version Go recorded in the binary, else "devel".
func Version() string {
	if version != "" {
		return version
	}
	return buildVersion()
}
