package cli_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLearnShardsMergeToLearn: the τ² sample's airline sessions, one
// per shard, learned with hoist learn --shard, merged, replayed with the
// merged counts (--shard --counts) and merged again, give the bytes of
// hoist learn over all of them, arbiter included; and a merge that cannot
// give them names the file and the field.
func TestLearnShardsMergeToLearn(t *testing.T) {
	dir := t.TempDir()
	src := tau2Path("logs", "airline")
	logs, _ := filepath.Glob(filepath.Join(src, "*", "*.jsonl"))
	var sessions []string
	for _, l := range logs {
		if !strings.HasSuffix(l, ".context.jsonl") {
			sessions = append(sessions, strings.TrimSuffix(l, ".jsonl"))
		}
	}
	if len(sessions) < 3 {
		t.Fatalf("%d airline sessions in %s, want 3", len(sessions), src)
	}
	all := filepath.Join(dir, "all")
	var shards []string
	for i, s := range sessions {
		shard := filepath.Join(dir, "shard"+string(rune('a'+i)))
		for _, to := range []string{all, shard} {
			for _, ext := range []string{".jsonl", ".context.jsonl", ".meta.json"} {
				data, err := os.ReadFile(s + ext)
				if err != nil {
					continue
				}
				os.MkdirAll(to, 0o700)
				if err := os.WriteFile(filepath.Join(to, filepath.Base(s)+ext), data, 0o600); err != nil {
					t.Fatal(err)
				}
			}
		}
		shards = append(shards, shard)
	}
	learnArgs := []string{"--domain", "airline", "--folds", "2", "--min-support", "1", "-q"}
	whole := filepath.Join(dir, "whole.flow.json")
	mustRun(t, append([]string{"learn", "--sessions", all, "-o", whole}, learnArgs...)...)

	var counts, tables []string
	for i, s := range shards {
		out := filepath.Join(dir, "counts"+string(rune('a'+i))+".flow.json")
		mustRun(t, append([]string{"learn", "--sessions", s, "--shard", "-o", out}, learnArgs...)...)
		counts = append(counts, out)
	}
	merged := filepath.Join(dir, "counts.flow.json")
	r := mustRun(t, append([]string{"flow", "merge", "-o", merged}, counts[2], counts[0], counts[1])...)
	if !strings.Contains(r.stderr, "merged the counts of 3 shards") || !strings.Contains(r.stderr, "hoist learn --shard --counts "+merged) {
		t.Errorf("flow merge of the counts said %q", r.stderr)
	}
	for i, s := range shards {
		out := filepath.Join(dir, "table"+string(rune('a'+i))+".flow.json")
		mustRun(t, "learn", "--sessions", s, "--shard", "--counts", merged, "-q", "-o", out)
		tables = append(tables, out)
	}
	final := filepath.Join(dir, "merged.flow.json")
	r = mustRun(t, append([]string{"flow", "merge", "-o", final}, tables[1], tables[2], tables[0])...)
	if !strings.Contains(r.stderr, "merged the training tables of 3 shards") {
		t.Errorf("flow merge of the tables said %q", r.stderr)
	}
	a, _ := os.ReadFile(whole)
	b, err := os.ReadFile(final)
	if err != nil || !bytes.Equal(a, b) {
		t.Fatalf("learn --shard ×3 and flow merge differ from learn (%v):\n%s\n---\n%s", err, a, b)
	}

	t.Run("bad input", func(t *testing.T) {
		other := filepath.Join(dir, "other.flow.json")
		mustRun(t, "learn", "--sessions", shards[0], "--shard", "--domain", "airline", "--folds", "2", "--min-support", "2", "-q", "-o", other)
		out := filepath.Join(dir, "never.flow.json")
		arbiter := filepath.Join("testdata", "flowshow", "shop-arbiter.flow.json")
		for _, c := range []struct {
			name string
			args []string
			code int
			says string
		}{
			{"another min support", []string{counts[0], other}, 1, other + ": shard.counts.options.min_support: 2, the first flow has 1"},
			{"a whole flow among shards", []string{counts[0], whole}, 1, whole + ": shard: missing: not learned with hoist learn --shard"},
			{"flows with arbiters", []string{arbiter, arbiter}, 1, arbiter + ": arbiter: fitted on the 420 offers of one flow's episodes: arbiters do not add"},
			{"a table among counts", []string{counts[0], tables[0]}, 1, tables[0] + ": shard.table: a training table, while the first flow holds partial counts"},
			{"tables of some shards", []string{tables[0], tables[1]}, 1, "shard.table.episodes: the tables hold 2 of the 3 episodes"},
			{"--counts without --shard", nil, 2, "--counts: needs --shard"},
		} {
			t.Run(c.name, func(t *testing.T) {
				args := append([]string{"flow", "merge", "--out", out}, c.args...)
				if c.args == nil {
					args = []string{"learn", "--sessions", shards[0], "--counts", merged, "-o", out}
				}
				r := run(t, nil, args...)
				if r.code != c.code || !strings.Contains(r.stderr, c.says) || strings.Contains(r.stderr, "&{") || strings.Count(strings.TrimSpace(r.stderr), "\n") > 1 {
					t.Errorf("exit %d, said %q; want exit %d saying %q", r.code, r.stderr, c.code, c.says)
				}
				if _, err := os.Stat(out); err == nil {
					t.Error("a flow was written")
				}
			})
		}
	})
}
