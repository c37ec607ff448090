// Package buildinfo says which version of hoist is running: the version
// stamped at build time with -ldflags "-X …/buildinfo.version=v1.2.3", else
// what the Go toolchain recorded (the module version, which go build and go
// install derive from the VCS tag or revision), else "dev".
package buildinfo

import (
	"runtime/debug"
	"time"
)

// version is set by the linker; see the Makefile.
var version string

// Version returns the running binary's version.
func Version() string {
	if version != "" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	return fromBuildInfo(bi)
}

// fromBuildInfo returns the version bi records: the main module's version
// (v1.2.3 from go install …@v1.2.3, or a pseudo-version such as
// v0.0.0-20261204134500-49d77bcabcde+dirty from a git checkout), else a
// pseudo-version made the same way from the VCS settings, else "dev" (a
// build outside version control, or with -buildvcs=false).
func fromBuildInfo(bi *debug.BuildInfo) string {
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, stamp, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			if t, err := time.Parse(time.RFC3339, s.Value); err == nil {
				stamp = t.UTC().Format("20060102150405")
			}
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if rev == "" {
		return "dev"
	}
	if stamp == "" {
		stamp = "00000000000000"
	}
	return "v0.0.0-" + stamp + "-" + rev[:min(12, len(rev))] + dirty
}
