package buildinfo

import "testing"

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
