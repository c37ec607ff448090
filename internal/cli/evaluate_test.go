package cli_test

import (
	"strings"
	"testing"
)

// Flag errors of hoist evaluate exit 2 before any store is opened.
func TestEvaluateFlags(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"evaluate"}, "name the store with --store PATH"},
		{[]string{"evaluate", "--sessions", dir, "--rule", "reach:2"}, "--rule: rule \"reach:2\": threshold"},
		{[]string{"evaluate", "--sessions", dir, "--rule", "arbiter:0.3"}, "decider: want reach or habit"},
		{[]string{"evaluate", "--sessions", dir, "--detour-cost", "-1"}, "--detour-cost -1"},
		{[]string{"evaluate", "--sessions", dir, "--clip", "-3"}, "--clip -3"},
		{[]string{"evaluate", "--sessions", dir, "--level", "1"}, "--level 1"},
		{[]string{"evaluate", "--sessions", dir, "--reps", "10"}, "--reps 10"},
	} {
		_, errOut, code := runInProcess(t, c.args...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("hoist %s: exit %d, %q; want 2 and %q", strings.Join(c.args, " "), code, errOut, c.want)
		}
	}
	// A directory without flow logs: one clear line, exit 1.
	_, errOut, code := runInProcess(t, "evaluate", "--sessions", dir, "-q")
	if code != 1 || !strings.Contains(errOut, "no flow decisions: record sessions with hoist-mcp --flow") {
		t.Errorf("evaluate with no decisions: exit %d, %q", code, errOut)
	}
	help, _, _ := runInProcess(t, "evaluate", "--help")
	for _, want := range []string{"before its next write", "--detour-cost", "1/k", "docs/evaluate.md"} {
		if !strings.Contains(help, want) {
			t.Errorf("--help lacks %q", want)
		}
	}
}
