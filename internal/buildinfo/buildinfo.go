// Package buildinfo says which version of hoist is running: the version
// stamped at build time with -ldflags "-X …/buildinfo.version=v1.2.3", else
// what the Go toolchain recorded (module version, VCS revision), else "dev".
package buildinfo

import (
	"runtime/debug"
	"strings"
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
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = "-dirty"
			}
		}
	}
	if rev != "" {
		return "dev-" + strings.TrimSpace(rev)[:min(12, len(rev))] + modified
	}
	return "dev"
}
