package buildinfo

import (
	"runtime/debug"
	"testing"
)

func TestVersionStamped(t *testing.T) {
	old := version
	t.Cleanup(func() { version = old })
	version = "v9.8.7"
	if got := Version(); got != "v9.8.7" {
		t.Errorf("Version() = %q, want the stamped v9.8.7", got)
	}
	version = ""
	if got := Version(); got == "" {
		t.Error("Version() is empty without a stamp")
	}
}

func TestFromBuildInfo(t *testing.T) {
	vcs := []debug.BuildSetting{
		{Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: "49d77bcabcde0123456789abcdef0123456789ab"},
		{Key: "vcs.time", Value: "2026-12-04T13:45:00Z"},
		{Key: "vcs.modified", Value: "true"},
	}
	for _, tc := range []struct {
		name     string
		version  string
		settings []debug.BuildSetting
		want     string
	}{
		{"go install …@v1.2.3", "v1.2.3", nil, "v1.2.3"},
		{"go build in a git checkout", "v0.0.0-20261204134500-49d77bcabcde+dirty", vcs, "v0.0.0-20261204134500-49d77bcabcde+dirty"},
		{"(devel) with the VCS settings", "(devel)", vcs, "v0.0.0-20261204134500-49d77bcabcde+dirty"},
		{"(devel), clean", "(devel)", vcs[:3], "v0.0.0-20261204134500-49d77bcabcde"},
		{"no version control", "(devel)", nil, "dev"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bi := &debug.BuildInfo{Main: debug.Module{Path: "github.com/hoist-mcp/hoist", Version: tc.version}, Settings: tc.settings}
			if got := fromBuildInfo(bi); got != tc.want {
				t.Errorf("fromBuildInfo = %q, want %q", got, tc.want)
			}
		})
	}
}
