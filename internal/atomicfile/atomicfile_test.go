package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.json")
	for _, s := range []string{"one", "two"} {
		if err := WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(p); string(got) != s {
			t.Errorf("got %q, want %q", got, s)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("left %d files behind", len(entries))
	}
	if err := WriteFile(filepath.Join(dir, "missing", "b"), nil, 0o644); err == nil {
		t.Error("writing into a missing directory succeeded")
	}
}
