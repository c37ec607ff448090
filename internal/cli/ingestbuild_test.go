package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A first ingest builds its store beside the path and puts it there whole:
// bad input that stops it at the second of three results files leaves no
// store, half or whole, and no file beside, with the message naming
// file:line and exit 1 as before.
func TestFirstIngestStoppedLeavesNoStore(t *testing.T) {
	dir := t.TempDir()
	results := filepath.Join(dir, "results")
	copyTestdata(t, "tau2/results", results)
	good, _ := filepath.Glob(filepath.Join(results, "*.json"))
	bad := filepath.Join(results, "bad.json")
	if err := os.WriteFile(bad, []byte("{\"simulations\": [\n{\"id\": 1,\n oops\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	storeDir := filepath.Join(dir, "store")
	if err := os.Mkdir(storeDir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(storeDir, "hoist.db")
	r := run(t, nil, "ingest", "-q", "--store", path, "--tau2", good[0], bad, good[1])
	if r.code != 1 || !strings.Contains(r.stderr, bad+":2:") {
		t.Errorf("ingest stopped by bad input: exit %d, stderr\n%s\nwant exit 1 naming %s:2", r.code, r.stderr, bad)
	}
	if es, _ := os.ReadDir(storeDir); len(es) != 0 {
		t.Errorf("left beside the store: %v", es)
	}
	mustRun(t, "ingest", "-q", "--store", path, "--tau2", good[0], good[1])
	if es, _ := os.ReadDir(storeDir); len(es) != 1 || es[0].Name() != "hoist.db" {
		t.Errorf("after a whole ingest: %v", es)
	}
}
