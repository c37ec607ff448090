package pipeline_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/memfs"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/hoist-mcp/hoist/beam/pipeline"
	"github.com/hoist-mcp/hoist/internal/testbin"
)

func TestMain(m *testing.M) {
	code := ptest.MainRetWithDefault(m, "prism")
	os.Exit(code)
}

// copyTree copies src's files into a new directory.
func copyTree(t testing.TB, src string) string { return testbin.CopyTree(t, src) }

// hoist runs the hoist binary and fails the test when it fails (exit 3,
// done with bad input named, is done).
func hoist(t testing.TB, args ...string) {
	t.Helper()
	cmd := exec.Command(testbin.Build(t, "hoist"), args...)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 3) {
		t.Fatalf("hoist %v: %v\n%s", args, err, out)
	}
}

// runLearn runs the learn pipeline on Prism and returns the flow's bytes.
func runLearn(t testing.TB, src pipeline.Sources, opt pipeline.LearnOptions) []byte {
	t.Helper()
	out := filepath.Join(t.TempDir(), "beam.flow.json")
	p, s := beam.NewPipelineWithRoot()
	pipeline.WriteFlow(s, pipeline.Learn(s, src, opt), out)
	if err := ptest.Run(p); err != nil {
		t.Fatalf("learn pipeline: %v", err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func tau2(parts ...string) string {
	return filepath.Join(append([]string{testbin.Root(), "testdata", "tau2"}, parts...)...)
}

// TestLearnIsHoistLearn: on the testdata sessions (several servers in one
// host session, .meta.json sidecars, a malformed line, flow logs) and the
// τ² sample's results files, the pipeline on Prism writes the flow hoist
// learn writes, byte for byte, arbiter included.
func TestLearnIsHoistLearn(t *testing.T) {
	root := testbin.Root()
	for _, tc := range []struct {
		name string
		dir  string // session logs, copied; each directory's files by glob
		opt  pipeline.LearnOptions
		args []string
	}{
		{"retail arbiter", "testdata/tau2/logs/retail", pipeline.LearnOptions{Domain: "retail", Folds: 2, MinSupport: 1}, []string{"--domain", "retail", "--folds", "2", "--min-support", "1"}},
		{"airline defaults", "testdata/tau2/logs/airline", pipeline.LearnOptions{Domain: "airline", Folds: 5, MinSupport: 3}, []string{"--domain", "airline"}},
		{"airline habit-only", "testdata/tau2/logs/airline", pipeline.LearnOptions{Domain: "airline", Folds: 2, MinSupport: 1, HabitOnly: true}, []string{"--domain", "airline", "--folds", "2", "--min-support", "1", "--habit-only"}},
		{"support several servers", "testdata/sessions/support", pipeline.LearnOptions{Folds: 1, MinSupport: 1}, []string{"--folds", "1", "--min-support", "1"}},
		{"flow logs and a bad line", "testdata/sessions", pipeline.LearnOptions{Domain: "support", Folds: 2, MinSupport: 1}, []string{"--domain", "support", "--folds", "2", "--min-support", "1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyTree(t, filepath.Join(root, tc.dir))
			want := filepath.Join(t.TempDir(), "hoist.flow.json")
			hoist(t, append([]string{"learn", "--sessions", dir, "-q", "-o", want}, tc.args...)...)
			globs := []string{filepath.Join(dir, "*"), filepath.Join(dir, "*", "*")}
			got := runLearn(t, pipeline.Sources{Sessions: globs}, tc.opt)
			wantData, _ := os.ReadFile(want)
			if !bytes.Equal(got, wantData) {
				t.Fatalf("the pipeline's flow differs from hoist learn's:\n%s\n---\n%s", got, wantData)
			}
		})
	}
	t.Run("tau2 results", func(t *testing.T) {
		store := filepath.Join(t.TempDir(), "hoist.db")
		results, _ := filepath.Glob(tau2("results", "*.json"))
		hoist(t, append([]string{"ingest", "--store", store, "-q", "--tools", tau2("tool_kinds.json"), "--tool-schemas", tau2("tools.json"), "--tau2"}, results...)...)
		want := filepath.Join(t.TempDir(), "hoist.flow.json")
		hoist(t, "learn", "--store", store, "--domain", "airline", "--folds", "2", "--min-support", "1", "-q", "-o", want)
		got := runLearn(t, pipeline.Sources{Tau2: []string{tau2("results", "*.json")}, Tools: tau2("tool_kinds.json"), ToolSchemas: tau2("tools.json")},
			pipeline.LearnOptions{Domain: "airline", Folds: 2, MinSupport: 1})
		wantData, _ := os.ReadFile(want)
		if !bytes.Equal(got, wantData) {
			t.Fatalf("the pipeline's flow differs from hoist learn's:\n%s\n---\n%s", got, wantData)
		}
	})
}

// TestLearnThroughAFilesystem: logs read through a filesystem by URL (Beam's
// in-memory one, memfs://, as gs:// and s3:// are read), their sidecars
// found beside them and the flow written there, give the flow of the same
// logs on disk.
func TestLearnThroughAFilesystem(t *testing.T) {
	root := testbin.Root()
	for _, tc := range []struct {
		name, dir string
		opt       pipeline.LearnOptions
	}{
		{"retail", "testdata/tau2/logs/retail", pipeline.LearnOptions{Domain: "retail", Folds: 2, MinSupport: 1}},
		{"support", "testdata/sessions/support", pipeline.LearnOptions{Folds: 1, MinSupport: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(root, tc.dir)
			url := "memfs://" + t.Name() + "/logs"
			err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				data, err := os.ReadFile(p)
				rel, _ := filepath.Rel(dir, p)
				memfs.Write(url+"/"+filepath.ToSlash(rel), data)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			want := runLearn(t, pipeline.Sources{Sessions: []string{filepath.Join(dir, "*"), filepath.Join(dir, "*", "*")}}, tc.opt)
			out := "memfs://" + t.Name() + "/flows/beam.flow.json"
			p, s := beam.NewPipelineWithRoot()
			pipeline.WriteFlow(s, pipeline.Learn(s, pipeline.Sources{Sessions: []string{url + "/*", url + "/*/*"}}, tc.opt), out)
			if err := ptest.Run(p); err != nil {
				t.Fatalf("learn pipeline: %v", err)
			}
			rc, err := memfs.New(context.Background()).OpenRead(context.Background(), out)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(rc)
			if !bytes.Equal(got, want) {
				t.Fatalf("the flow through memfs:// differs from the flow from disk:\n%s\n---\n%s", got, want)
			}
		})
	}
}
