package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hoist-mcp/hoist/internal/testbin"
)

func TestMain(m *testing.M) { os.Exit(testbin.Main(m)) }

// result is one run of the built hoist-mcp.
type result struct {
	code           int
	stdout, stderr string
}

func hoistMCP(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	cmd := exec.Command(testbin.Build(t, "hoist-mcp"), args...)
	cmd.Env = testbin.Env()
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return r
}

// TestBadFlowFile: a --flow file that cannot be served is the proxy's own
// failure, not a usage mistake: exit 125, one line naming the file and the
// field, no usage hint, no session log, and the server never started
// (manual, "Usage": "If the proxy itself fails …, it exits with 125 and
// leaves no log behind").
func TestBadFlowFile(t *testing.T) {
	good, err := os.ReadFile(filepath.Join(testbin.Root(), "testdata", "flows", "tau2-retail.flow.json"))
	if err != nil {
		t.Fatal(err)
	}
	edit := func(old, new string) []byte {
		t.Helper()
		if !bytes.Contains(good, []byte(old)) {
			t.Fatalf("the flow no longer holds %q", old)
		}
		return bytes.Replace(good, []byte(old), []byte(new), 1)
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		data []byte // nil: no file
		want string // the part of the message that says what is wrong, and where
	}{
		{"truncated", good[:len(good)/2], "JSON"},
		{"version 3", edit(`"hoist_flow": 1`, `"hoist_flow": 3`), "hoist_flow: version 3"},
		{"unknown field", edit(`"folds": 5,`, `"folds": 5, "fold": 5,`), `"fold"`},
		{"write tool looked up", edit(`"get_order_details": {
      "server": "retail",
      "kind": "read"`, `"get_order_details": {
      "server": "retail",
      "kind": "write"`), `.tool: "get_order_details" is a write tool`},
		{"missing", nil, "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".flow.json")
			if tc.data != nil {
				if err := os.WriteFile(file, tc.data, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			logs := t.TempDir()
			marker := filepath.Join(t.TempDir(), "started")
			r := hoistMCP(t, "", "--record", logs, "--flow", file, "--", "sh", "-c", "touch "+marker)
			if r.code != 125 {
				t.Errorf("exit %d, want 125 (the proxy's own failure)", r.code)
			}
			if !strings.HasPrefix(r.stderr, "hoist-mcp: --flow: ") || !strings.Contains(r.stderr, file) || !strings.Contains(r.stderr, tc.want) || strings.Count(r.stderr, "\n") != 1 {
				t.Errorf("stderr %q; want one line naming --flow and %s, and holding %q", r.stderr, file, tc.want)
			}
			if strings.Contains(r.stderr, "--help") {
				t.Errorf("stderr %q: a bad flow file is not a usage error", r.stderr)
			}
			if r.stdout != "" {
				t.Errorf("stdout (the wire) %q", r.stdout)
			}
			if entries, _ := os.ReadDir(logs); len(entries) != 0 {
				t.Errorf("left in --record: %v", entries)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Error("the server was started")
			}
		})
	}
}
