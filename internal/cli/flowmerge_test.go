package cli_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFlowMerge: the flows of two shards of τ²-bench results, each learned
// by hoist compile, merge into the bytes of learning both at once.
func TestFlowMerge(t *testing.T) {
	dir := t.TempDir()
	shards := []string{tau2Path("results", "airline-gpt-4o.json"), tau2Path("results", "airline-gpt-oss-120b-langchain.json")}
	var flows []string
	for i, shard := range shards {
		out := filepath.Join(dir, "shard"+string(rune('a'+i))+".flow.json")
		mustRun(t, "compile", "--min-support", "1", "-q", "-o", out, shard)
		flows = append(flows, out)
	}
	whole := filepath.Join(dir, "whole.flow.json")
	mustRun(t, append([]string{"compile", "--min-support", "1", "-q", "-o", whole}, shards...)...)
	merged := filepath.Join(dir, "merged.flow.json")
	if r := mustRun(t, append([]string{"flow", "merge", "--out", merged}, flows...)...); !strings.Contains(r.stderr, "merged 2 flows") {
		t.Errorf("flow merge said %q", r.stderr)
	}
	a, _ := os.ReadFile(whole)
	b, err := os.ReadFile(merged)
	if err != nil || !bytes.Equal(a, b) {
		t.Errorf("the merge differs from the whole (%v):\n%s\n---\n%s", err, a, b)
	}
	if st, err := os.Stat(merged); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("merged flow: %v, %v", st.Mode(), err)
	}
	if r := mustRun(t, append([]string{"flow", "merge", "-q", "-o", "-"}, flows...)...); r.stdout != string(a) || r.stderr != "" {
		t.Errorf("flow merge -o -: printed %d bytes and %q, want the %d of the whole", len(r.stdout), r.stderr, len(a))
	}

	t.Run("bad input", func(t *testing.T) {
		other := filepath.Join(dir, "other.flow.json")
		mustRun(t, "compile", "--min-support", "2", "-q", "-o", other, shards[0])
		notFlow := filepath.Join(dir, "notes.json")
		os.WriteFile(notFlow, []byte(`{"notes":1}`), 0o600)
		out := filepath.Join(dir, "never.flow.json")
		for _, c := range []struct {
			name string
			args []string
			code int
			says string
		}{
			{"no --out", []string{flows[0], flows[1]}, 2, "--out"},
			{"no flows", []string{"--out", out}, 2, "requires at least 1 arg"},
			{"another min support", []string{"--out", out, flows[0], other}, 1, other + ": min_support: 2, the first flow has 1"},
			{"not a flow", []string{"--out", out, flows[0], notFlow}, 1, notFlow + ": hoist_flow: missing"},
			{"a missing file", []string{"--out", out, flows[0], filepath.Join(dir, "nope.json")}, 1, "nope.json"},
		} {
			t.Run(c.name, func(t *testing.T) {
				r := run(t, nil, append([]string{"flow", "merge"}, c.args...)...)
				if r.code != c.code || !strings.Contains(r.stderr, c.says) || strings.Count(strings.TrimSpace(r.stderr), "\n") > 1 {
					t.Errorf("exit %d, said %q; want exit %d saying %q", r.code, r.stderr, c.code, c.says)
				}
				if _, err := os.Stat(out); err == nil {
					t.Error("a flow was written")
				}
			})
		}
	})
}
