package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hoist-mcp/hoist/internal/testbin"
)

// TestMistypedStorePathRefused: a --store in a directory that does not
// exist is refused before anything is made, naming the flag and the path
// (exit 2): hoist makes the store file, never the folders above it, so a
// typo does not leave a tree of empty directories behind.
func TestMistypedStorePathRefused(t *testing.T) {
	logs := t.TempDir()
	missing := filepath.Join(t.TempDir(), "no", "such", "dir")
	path := filepath.Join(missing, "x.db")
	results := filepath.Join(testbin.Root(), "testdata", "tau2", "results", "retail-gpt-4.1.json")
	for _, args := range [][]string{
		{"ingest", "--sessions", logs, "--store", path},
		{"ingest", "--tau2", results, "--store", path},
		{"learn", "--sessions", logs, "--store", path, "-o", filepath.Join(logs, "f.json")},
		{"sessions", "--sessions", logs, "--store", path},
	} {
		r := run(t, nil, args...)
		if r.code != 2 || !strings.Contains(r.stderr, "--store "+path) || !strings.Contains(r.stderr, missing) {
			t.Errorf("hoist %s: exit %d, stderr %q; want exit 2 naming --store and %s", strings.Join(args, " "), r.code, r.stderr, missing)
		}
		if _, err := os.Stat(filepath.Dir(missing)); err == nil {
			t.Fatalf("hoist %s created %s", strings.Join(args, " "), filepath.Dir(missing))
		}
	}
}
