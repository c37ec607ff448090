package logs_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/hoist-mcp/hoist/beam/logs"
	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/internal/testbin"
	"github.com/hoist-mcp/hoist/learn"
)

func TestMain(m *testing.M) { os.Exit(testbin.Main(m)) }

// copyTree copies src's files into a new directory.
func copyTree(t testing.TB, src string) string { return testbin.CopyTree(t, src) }

// readTree reads every episode under dir with Peek, Plan and Episodes.
func readTree(t testing.TB, dir string) ([]*episode.Episode, []error) {
	t.Helper()
	ctx := context.Background()
	byDir := map[string][]logs.File{}
	metas := map[string][]string{}
	var warns []error
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		switch logs.Kind(p) {
		case logs.KindMeta:
			metas[logs.Dir(p)] = append(metas[logs.Dir(p)], p)
		case logs.KindLog:
			r, _ := os.Open(p)
			f, err := logs.Peek(r, p)
			r.Close()
			if err != nil {
				warns = append(warns, err)
				return nil
			}
			byDir[logs.Dir(p)] = append(byDir[logs.Dir(p)], f)
		}
		return nil
	})
	var eps []*episode.Episode
	for d, files := range byDir {
		for _, u := range logs.Plan(d, files, metas[d]) {
			got, _ := logs.Episodes(ctx, logs.OpenLocal, u, func(err error) { warns = append(warns, err) })
			eps = append(eps, got...)
		}
	}
	return eps, warns
}

// TestEpisodesLearnAsHoistLearn: the episodes read without the store learn
// the flow hoist learn --sessions writes, byte for byte.
func TestEpisodesLearnAsHoistLearn(t *testing.T) {
	hoist := testbin.Build(t, "hoist")
	root := testbin.Root()
	for _, tc := range []struct {
		name, dir string
		args      []string
		opt       learn.Options
	}{
		{"retail", "testdata/tau2/logs/retail", []string{"--domain", "retail", "--folds", "2", "--min-support", "1"}, learn.Options{Domain: "retail", Folds: 2, MinSupport: 1}},
		{"airline", "testdata/tau2/logs/airline", []string{"--domain", "airline"}, learn.Options{Domain: "airline"}},
		{"support", "testdata/sessions/support", []string{"--min-support", "1", "--folds", "1"}, learn.Options{Folds: 1, MinSupport: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyTree(t, filepath.Join(root, tc.dir))
			out := filepath.Join(t.TempDir(), "want.flow.json")
			cmd := exec.Command(hoist, append([]string{"learn", "--sessions", dir, "-q", "-o", out}, tc.args...)...)
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("hoist learn: %v\n%s", err, b)
			}
			want, _ := os.ReadFile(out)
			eps, warns := readTree(t, dir)
			if len(warns) > 0 {
				t.Errorf("warnings on good logs: %v", errors.Join(warns...))
			}
			opt := tc.opt
			src := logs.Slice(eps)
			f, err := learn.FromSource(context.Background(), src, episode.Filter{Domain: opt.Domain}, opt)
			if err != nil {
				t.Fatal(err)
			}
			if err := learn.FitArbiter(context.Background(), src, episode.Filter{Domain: opt.Domain}, f); err != nil {
				t.Fatal(err)
			}
			got, _ := f.Marshal()
			if !bytes.Equal(got, want) {
				t.Fatalf("flows differ:\n%s\n---\n%s", got, want)
			}
		})
	}
}
