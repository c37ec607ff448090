package pipeline_test

import (
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/hoist-mcp/hoist/beam/pipeline"
	"github.com/hoist-mcp/hoist/internal/testbin"
)

// TestExportIsHoistExport: the export pipeline on Prism writes Parquet
// whose rows DuckDB reads as hoist export's, dataset by dataset, partition
// columns included, in several shards a partition.
func TestExportIsHoistExport(t *testing.T) {
	peers := testbin.Peers(t)
	dir := copyTree(t, filepath.Join(testbin.Root(), "testdata"))
	// The logs (several servers in one host session, sidecars, a bad line,
	// a file that is no log) and the τ² sample's results, in one store.
	store := filepath.Join(t.TempDir(), "hoist.db")
	hoist(t, "ingest", "--sessions", filepath.Join(dir, "sessions"), "--store", store, "-q")
	hoist(t, "ingest", "--sessions", filepath.Join(dir, "tau2", "logs"), "--store", store, "-q")
	results, _ := filepath.Glob(filepath.Join(dir, "tau2", "results", "*.json"))
	hoist(t, append([]string{"ingest", "--store", store, "-q", "--tools", filepath.Join(dir, "tau2", "tool_kinds.json"),
		"--tool-schemas", filepath.Join(dir, "tau2", "tools.json"), "--tau2"}, results...)...)
	want := filepath.Join(t.TempDir(), "hoist")
	hoist(t, "export", "--store", store, "--format", "parquet", "--out", want, "-q")

	got := filepath.Join(t.TempDir(), "beam")
	p, s := beam.NewPipelineWithRoot()
	pipeline.Export(s, pipeline.Sources{
		Sessions: []string{filepath.Join(dir, "sessions", "*", "*"), filepath.Join(dir, "tau2", "logs", "*", "*", "*")},
		Tau2:     []string{filepath.Join(dir, "tau2", "results", "*.json")},
		Tools:    filepath.Join(dir, "tau2", "tool_kinds.json"), ToolSchemas: filepath.Join(dir, "tau2", "tools.json"),
	}, got, 3)
	if err := ptest.Run(p); err != nil {
		t.Fatalf("export pipeline: %v", err)
	}
	args := append([]string{filepath.Join("testdata", "duckdb_rows.js"), peers, want, got}, pipeline.ExportDatasets...)
	out, err := exec.Command("node", args...).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("duckdb_rows.js: %v\n%s", err, ee.Stderr)
		}
		t.Fatal(err)
	}
	var res map[string]struct {
		RowsA, RowsB, OnlyA, OnlyB int
		SameTypes                  bool
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, name := range pipeline.ExportDatasets {
		r := res[name]
		t.Logf("%s: %d rows (hoist export), %d (pipeline)", name, r.RowsA, r.RowsB)
		if r.RowsA == 0 || r.RowsA != r.RowsB || r.OnlyA != 0 || r.OnlyB != 0 || !r.SameTypes {
			t.Errorf("%s: hoist export %d rows, the pipeline %d; %d only in hoist export's, %d only in the pipeline's; same types %v",
				name, r.RowsA, r.RowsB, r.OnlyA, r.OnlyB, r.SameTypes)
		}
	}
	if parts, _ := filepath.Glob(filepath.Join(got, "calls", "*", "*", "part-*.parquet")); len(parts) < 2 {
		t.Errorf("calls in %d files, want shards", len(parts))
	}
}
