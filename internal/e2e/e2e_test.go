package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/hoist-mcp/hoist/internal/testbin"
)

// TestMain runs the tests, or, with HOIST_E2E_PEER set, lets the test
// binary stand in for a go-sdk server (runPeer).
func TestMain(m *testing.M) {
	if mode := os.Getenv(peerEnv); mode != "" {
		os.Exit(runPeer(mode))
	}
	os.Exit(testbin.Main(m))
}

// peerBin returns the path of an npm peer's program in node_modules/.bin.
func peerBin(t testing.TB, nodeModules, name string) string {
	t.Helper()
	p := filepath.Join(nodeModules, ".bin", name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("npm peer program %s missing (is peers/package.json installed?): %v", name, err)
	}
	return p
}

// run runs cmd and returns its stdout; it fails the test with the command's
// stderr when it does not exit 0.
func run(t testing.TB, what string, cmd *exec.Cmd) []byte {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\ncommand: %q\nstderr:\n%s", what, err, cmd.Args, stderr.Bytes())
	}
	return stdout.Bytes()
}
