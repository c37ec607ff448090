package democli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hoist-mcp/hoist/internal/testbin"
)

// TestDemoScript runs make demo's script (scripts/demo.sh) over the test's
// builds of the four programs, and wants every step through: the flow
// served to a new customer skips turns, and so does the τ²-bench agent
// replayed live.
func TestDemoScript(t *testing.T) {
	if testing.Short() {
		t.Skip("the demo runs a dozen sessions")
	}
	bin := t.TempDir()
	for _, name := range []string{"hoist", "hoist-mcp", "hoist-mcp-demo", "hoist-procedure"} {
		if err := os.Symlink(testbin.Build(t, name), filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("bash", filepath.Join(testbin.Root(), "scripts", "demo.sh"))
	cmd.Env = append(testbin.Env(), "HOIST_BIN="+bin, "HOIST_DEMO_DIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("scripts/demo.sh: %v\n%s", err, out)
	}
	for _, want := range []string{
		"== 5. Serve it",
		"2 LLM turns made, 2 skipped",
		"== 6. Live on τ²-bench",
		"6 of 7 tool-calling turns made, 1 skipped",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the demo's output lacks %q:\n%s", want, out)
		}
	}
}
