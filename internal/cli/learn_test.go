package cli_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hoist-mcp/hoist/flow"
	"github.com/hoist-mcp/hoist/internal/testbin"
)

var update = flag.Bool("update", false, "rewrite golden files")

func tau2Path(parts ...string) string {
	return filepath.Join(append([]string{testbin.Root(), "testdata", "tau2"}, parts...)...)
}

// TestCompileAndLearnAgree learns the τ² sample twice: from its results
// files (compile) and from the same simulations recorded as session logs,
// through the store (learn --sessions). Both give the same sites, and each
// gives the same bytes when run again.
func TestCompileAndLearnAgree(t *testing.T) {
	dir := t.TempDir()
	results, _ := filepath.Glob(tau2Path("results", "retail-*.json"))
	compiled := filepath.Join(dir, "compiled.flow.json")
	args := append([]string{"compile", "--min-support", "1", "-o", compiled}, results...)
	if _, errOut, code := runInProcess(t, args...); code != 0 {
		t.Fatalf("compile: exit %d: %s", code, errOut)
	}
	again := filepath.Join(dir, "again.flow.json")
	args = append([]string{"compile", "--min-support", "1", "-q", "-o", again}, results...)
	if _, errOut, code := runInProcess(t, args...); code != 0 {
		t.Fatalf("compile: exit %d: %s", code, errOut)
	}
	a, _ := os.ReadFile(compiled)
	b, _ := os.ReadFile(again)
	if !bytes.Equal(a, b) {
		t.Errorf("compile is not byte-identical")
	}

	logs := filepath.Join(dir, "logs")
	copyTestdata(t, filepath.Join("tau2", "logs", "retail"), logs)
	learned := filepath.Join(dir, "learned.flow.json")
	_, errOut, code := runInProcess(t, "learn", "--sessions", logs, "--domain", "retail", "--min-support", "1", "-o", learned)
	if code != 0 {
		t.Fatalf("learn: exit %d: %s", code, errOut)
	}
	if !strings.Contains(errOut, "learned 8 sites from 2 episodes") {
		t.Errorf("learn said %q", errOut)
	}
	fc, err := flow.Load(compiled)
	if err != nil {
		t.Fatal(err)
	}
	fl, err := flow.Load(learned)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(fc.Sites, fl.Sites, cmp.AllowUnexported(flow.Bound{})); d != "" {
		t.Errorf("sites learned from logs differ from those compiled from results (-compile +learn):\n%s", d)
	}
	if fl.Learned.Sources[0] != "mcp" || fc.Learned.Sources[0] != "tau2" {
		t.Errorf("sources %v %v", fl.Learned.Sources, fc.Learned.Sources)
	}
	// A second learn reads the store (nothing new to ingest) and writes the
	// same bytes.
	learned2 := filepath.Join(dir, "learned2.flow.json")
	if _, errOut, code := runInProcess(t, "learn", "--store", filepath.Join(logs, "hoist.db"), "--domain", "retail", "--min-support", "1", "-o", learned2); code != 0 {
		t.Fatalf("learn --store: exit %d: %s", code, errOut)
	}
	c, _ := os.ReadFile(learned)
	d, _ := os.ReadFile(learned2)
	if !bytes.Equal(c, d) {
		t.Error("learn is not byte-identical")
	}
	if _, errOut, code := runInProcess(t, "learn", "--sessions", logs, "--domain", "nope", "-o", filepath.Join(dir, "x")); code != 1 || !strings.Contains(errOut, `no episodes to learn from in domain "nope"`) {
		t.Errorf("learn of an empty domain: exit %d, %q", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "x")); err == nil {
		t.Error("a failed learn left a flow")
	}
}

func TestLearnFlagErrors(t *testing.T) {
	for _, args := range [][]string{
		{"learn", "--domain", "retail"},
		{"learn", "--store", "x.db", "--folds", "0"},
		{"learn", "--store", "x.db", "--min-support", "0"},
		{"compile"},
		{"flow-show"},
		{"flow-show", "x.json", "--format", "svg"},
		{"flow-show", "x.json", "--decider", "oracle"},
		{"flow-show", "x.json", "--threshold", "2"},
	} {
		if _, errOut, code := runInProcess(t, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, errOut)
		}
	}
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.flow.json")
	os.WriteFile(bad, []byte(`{"hoist_flow":1,"domain":"x","servers":[],"folds":0,"min_support":1,"arbiter":false,"learned":{"episodes":0,"tasks":0,"sources":[],"digest":""},"tools":{},"sites":[{"tool":"a","failed":false,"count":{"n":1},"lookups":[{"tool":"w","reach":{"n":1},"habit":{"n":0},"bindings":[]}]}]}`), 0o644)
	if _, errOut, code := runInProcess(t, "flow-show", bad); code != 1 || !strings.Contains(errOut, bad+": sites[0].lookups[0].tool: \"w\" is not in tools") {
		t.Errorf("a bad flow: exit %d, %q", code, errOut)
	}
}

// TestFlowShow renders a golden flow in every format; -update rewrites
// testdata/flowshow/*.
func TestFlowShow(t *testing.T) {
	file := filepath.Join("testdata", "flowshow", "shop.flow.json")
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"text", nil},
		{"markdown", []string{"--format", "markdown"}},
		{"json", []string{"--format", "json"}},
		{"dot", []string{"--format", "dot"}},
		{"habit-0.9", []string{"--decider", "habit", "--threshold", "0.9", "--all"}},
		// A flow with an arbiter is served by it unless told otherwise.
		{"arbiter", []string{"--all"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := file
			if tc.name == "arbiter" {
				f = filepath.Join("testdata", "flowshow", "shop-arbiter.flow.json")
			}
			out, errOut, code := runInProcess(t, append([]string{"flow-show", f}, tc.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if tc.name == "json" {
				var v map[string]any
				if err := json.Unmarshal([]byte(out), &v); err != nil {
					t.Fatalf("not JSON: %v", err)
				}
			}
			path := filepath.Join("testdata", "flowshow", tc.name+".golden")
			if *update {
				os.WriteFile(path, []byte(out), 0o644)
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update)", err)
			}
			if d := cmp.Diff(string(want), out); d != "" {
				t.Errorf("%s (-want +got):\n%s", path, d)
			}
		})
	}
}
