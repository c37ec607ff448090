package redact

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestDirSameWhateverWorkers: the copy is a function of the key and the
// input alone, byte for byte, on one worker or several, and its manifest
// counts the same.
func TestDirSameWhateverWorkers(t *testing.T) {
	in := filepath.Join("..", "testdata", "tau2", "logs")
	dir := t.TempDir()
	var copies [2]map[string][]byte
	var manifests [2]*Manifest
	for i, workers := range []int{1, 4} {
		out := filepath.Join(dir, "out", string(rune('a'+i)))
		m, err := Dir(context.Background(), in, out, Options{Key: testKey, Workers: workers})
		if err != nil {
			t.Fatal(err)
		}
		manifests[i] = m
		copies[i] = map[string][]byte{}
		filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				b, _ := os.ReadFile(p)
				rel, _ := filepath.Rel(out, p)
				copies[i][rel] = b
			}
			return err
		})
	}
	if d := cmp.Diff(manifests[0], manifests[1]); d != "" {
		t.Errorf("manifests differ:\n%s", d)
	}
	if len(copies[0]) != 16 { // 5 logs, 5 contexts, 5 metas, the manifest
		t.Errorf("%d files written", len(copies[0]))
	}
	for name, b := range copies[0] {
		if !bytes.Equal(b, copies[1][name]) {
			t.Errorf("%s differs between 1 and 4 workers", name)
		}
	}
	// The output exists now: a second copy into it is refused.
	if _, err := Dir(context.Background(), in, filepath.Join(dir, "out", "a"), Options{Key: testKey}); err == nil {
		t.Error("Dir wrote over a full directory")
	}
	file := filepath.Join(dir, "a-file")
	os.WriteFile(file, []byte("keep me"), 0o600)
	if _, err := Dir(context.Background(), in, file, Options{Key: testKey}); err == nil {
		t.Error("Dir wrote over a file")
	}
	if b, _ := os.ReadFile(file); string(b) != "keep me" {
		t.Error("Dir removed a file named as its output")
	}
	if _, err := Dir(context.Background(), in, filepath.Join(dir, "short"), Options{Key: []byte("short")}); err == nil {
		t.Error("Dir took a 5-byte key")
	}
}
