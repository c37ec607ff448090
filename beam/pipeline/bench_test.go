package pipeline_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/hoist-mcp/hoist/beam/pipeline"
	"github.com/hoist-mcp/hoist/internal/testbin"
)

// BenchmarkLearnTau2 learns the retail flow from τ²-bench's recorded
// retail sessions and retail results files (HOIST_TAU2_DIR's logs/retail
// and results/retail-*.json, with its tool manifests; by default
// ../shared/data/tau2 beside the repository, skipped when missing) twice:
// with hoist learn from a store they were ingested into (learn alone, its
// process's start included), and with the learn pipeline on Prism from the
// files (reading and parsing included). Each reports episodes/s; the two
// flows must be the same bytes.
func BenchmarkLearnTau2(b *testing.B) {
	dir := os.Getenv("HOIST_TAU2_DIR")
	if dir == "" {
		dir = filepath.Join(testbin.Root(), "..", "shared", "data", "tau2")
	}
	logsDir := filepath.Join(dir, "logs", "retail")
	if _, err := os.Stat(logsDir); err != nil {
		b.Skipf("no τ²-bench logs: %v", err)
	}
	results, _ := filepath.Glob(filepath.Join(dir, "results", "retail-*.json"))
	kinds, schemas := filepath.Join(dir, "tool_kinds.json"), filepath.Join(dir, "tools.json")
	store := filepath.Join(b.TempDir(), "hoist.db")
	hoist(b, "ingest", "--sessions", logsDir, "--store", store, "-q")
	hoist(b, append([]string{"ingest", "--store", store, "-q", "--tools", kinds, "--tool-schemas", schemas, "--tau2"}, results...)...)
	src := pipeline.Sources{Sessions: []string{filepath.Join(logsDir, "*", "*")}, Tau2: []string{filepath.Join(dir, "results", "retail-*.json")},
		Tools: kinds, ToolSchemas: schemas}
	opt := pipeline.LearnOptions{Domain: "retail", Folds: 5, MinSupport: 3}
	var flows [2][]byte
	episodes := func(data []byte) int {
		var f struct {
			Learned struct{ Episodes int }
		}
		if err := json.Unmarshal(data, &f); err != nil {
			b.Fatal(err)
		}
		return f.Learned.Episodes
	}
	b.Run("hoist learn --store", func(b *testing.B) {
		out := filepath.Join(b.TempDir(), "flow.json")
		n := 0
		for b.Loop() {
			hoist(b, "learn", "--store", store, "--domain", "retail", "-q", "-o", out)
			flows[0], _ = os.ReadFile(out)
			n += episodes(flows[0])
		}
		b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "episodes/s")
	})
	b.Run("pipeline on prism", func(b *testing.B) {
		n := 0
		for b.Loop() {
			flows[1] = runLearn(b, src, opt)
			n += episodes(flows[1])
		}
		b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "episodes/s")
	})
	if flows[0] != nil && flows[1] != nil && !bytes.Equal(flows[0], flows[1]) {
		b.Errorf("the pipeline's flow differs from hoist learn's")
	}
}
