package learn

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hoist-mcp/hoist/episode"
)

// BenchmarkLearn learns from τ²-bench results files: the sample in
// testdata/tau2, or the directory HOIST_TAU2_DIR names (its results/ and
// manifests), such as the shared train data. HOIST_LEARN_WITH names
// levers that are off by default to learn with, comma-separated: cues,
// words (SaidConditions), agentwords; and nolists, the ablation of the
// conditions on empty lists (NoListConditions).
func BenchmarkLearn(b *testing.B) {
	var opt Options
	for _, w := range strings.Split(os.Getenv("HOIST_LEARN_WITH"), ",") {
		switch strings.TrimSpace(w) {
		case "":
		case "cues":
			opt.Cues = true
		case "words":
			opt.SaidConditions = true
		case "agentwords":
			opt.AgentWords = true
		case "nolists":
			opt.NoListConditions = true
		default:
			b.Fatalf("HOIST_LEARN_WITH: %q: want cues, words, agentwords or nolists", w)
		}
	}
	dir := os.Getenv("HOIST_TAU2_DIR")
	if dir == "" {
		dir = filepath.Join("..", "testdata", "tau2")
	}
	kinds, err := episode.LoadToolKinds(filepath.Join(dir, "tool_kinds.json"))
	if err != nil {
		b.Fatal(err)
	}
	schemas, _ := episode.LoadToolSchemas(filepath.Join(dir, "tools.json"))
	files, _ := filepath.Glob(filepath.Join(dir, "results", "*.json"))
	var eps []*episode.Episode
	for _, f := range files {
		e, err := episode.ReadTau2File(f, episode.Tau2Options{Kinds: kinds, Schemas: schemas})
		if err != nil {
			b.Fatal(err)
		}
		eps = append(eps, e...)
	}
	b.ResetTimer()
	n := 0
	for b.Loop() {
		l := New(opt)
		for _, ep := range eps {
			l.Add(ep)
		}
		l.Flow()
		n += len(eps)
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "episodes/s")
}
