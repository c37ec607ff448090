package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
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
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", st.Mode().Perm())
	}
	assertEntries(t, dir, "a.json")
	if err := WriteFile(filepath.Join(dir, "missing", "b"), nil, 0o644); err == nil {
		t.Error("writing into a missing directory succeeded")
	}
}

// assertEntries checks that dir holds exactly names: nothing temporary
// left behind.
func assertEntries(t *testing.T, dir string, names ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	slices.Sort(names)
	if !slices.Equal(got, names) {
		t.Errorf("%s holds %q, want %q", dir, got, names)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func mustFail(t *testing.T, err error, what string) {
	t.Helper()
	if err == nil {
		t.Fatal(what + " succeeded")
	}
}

var errMidway = errors.New("the writer gave up")

func TestWriteFailingMidwayKeepsTheOldFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "flow.json")
	if err := WriteFile(p, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := Write(p, 0o600, func(w io.Writer) error {
		if _, err := io.WriteString(w, "half of the new"); err != nil {
			return err
		}
		return errMidway
	})
	if !errors.Is(err, errMidway) {
		t.Fatalf("Write = %v, want the writer's error", err)
	}
	if got, _ := os.ReadFile(p); string(got) != "old" {
		t.Errorf("after a failed write the file holds %q, want the old content", got)
	}
	assertEntries(t, dir, "flow.json")
}

func TestWriteOntoADirectoryFailsCleanly(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out")
	must(t, os.Mkdir(p, 0o755))
	must(t, os.WriteFile(filepath.Join(p, "keep"), []byte("x"), 0o644))
	mustFail(t, WriteFile(p, []byte("new"), 0o644), "writing a file over a directory")
	assertEntries(t, dir, "out")
	assertEntries(t, p, "keep")
}

func TestWriteNew(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "part-0")
	if err := WriteNew(p, 0o600, func(w io.Writer) error { _, err := io.WriteString(w, "rows"); return err }); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(p); string(got) != "rows" {
		t.Errorf("got %q", got)
	}
	if err := WriteNew(p, 0o600, func(io.Writer) error { return nil }); err == nil {
		t.Error("WriteNew over an existing file succeeded")
	}
	if got, _ := os.ReadFile(p); string(got) != "rows" {
		t.Errorf("a refused WriteNew changed the file: %q", got)
	}
	q := filepath.Join(dir, "part-1")
	if err := WriteNew(q, 0o600, func(w io.Writer) error { io.WriteString(w, "some"); return errMidway }); !errors.Is(err, errMidway) {
		t.Errorf("WriteNew = %v, want the writer's error", err)
	}
	assertEntries(t, dir, "part-0")
}

// fillDir is a WriteDir fill that writes name with content, in a
// subdirectory too, as an export's partitions are.
func fillDir(content string) func(string) error {
	return func(dir string) error {
		if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
			return err
		}
		for _, p := range []string{filepath.Join(dir, "a"), filepath.Join(dir, "sub", "b")} {
			if err := WriteNew(p, 0o644, func(w io.Writer) error { _, err := io.WriteString(w, content); return err }); err != nil {
				return err
			}
		}
		return nil
	}
}

func assertDir(t *testing.T, dir, content string) {
	t.Helper()
	for _, p := range []string{filepath.Join(dir, "a"), filepath.Join(dir, "sub", "b")} {
		if got, err := os.ReadFile(p); err != nil || string(got) != content {
			t.Errorf("%s: %q, %v; want %q", p, got, err, content)
		}
	}
}

func TestWriteDir(t *testing.T) {
	parent := t.TempDir()
	out := filepath.Join(parent, "export")
	if err := WriteDir(out, 0o700, fillDir("one")); err != nil {
		t.Fatal(err)
	}
	assertDir(t, out, "one")
	if st, _ := os.Stat(out); st.Mode().Perm() != 0o700 {
		t.Errorf("mode %v, want 0700", st.Mode().Perm())
	}
	// Again over the first: the new one takes its place whole.
	if err := WriteDir(out, 0o700, fillDir("two")); err != nil {
		t.Fatal(err)
	}
	assertDir(t, out, "two")
	assertEntries(t, out, "a", "sub")
	assertEntries(t, parent, "export")
}

// oldDir writes the directory parent/export with "old" files, which the
// tests of failed writes then try to replace.
func oldDir(t *testing.T) (parent, out string) {
	t.Helper()
	parent = t.TempDir()
	out = filepath.Join(parent, "export")
	if err := WriteDir(out, 0o755, fillDir("old")); err != nil {
		t.Fatal(err)
	}
	return parent, out
}

func TestWriteDirFailingMidwayKeepsTheOldDir(t *testing.T) {
	parent, out := oldDir(t)
	err := WriteDir(out, 0o755, func(dir string) error {
		if err := fillDir("new")(dir); err != nil {
			return err
		}
		return errMidway
	})
	if !errors.Is(err, errMidway) {
		t.Fatalf("WriteDir = %v, want the fill's error", err)
	}
	assertDir(t, out, "old")
	assertEntries(t, parent, "export")
}

// A new directory that is gone before the swap fails the write, and the
// old directory stays.
func TestWriteDirWhoseNewDirVanishedKeepsTheOldDir(t *testing.T) {
	parent, out := oldDir(t)
	mustFail(t, WriteDir(out, 0o755, func(dir string) error { return os.RemoveAll(dir) }), "a write with nothing to swap in")
	assertDir(t, out, "old")
	assertEntries(t, parent, "export")
}

// When the rename of the new directory fails after the old one moved
// aside, the old one is put back.
func TestFailingSwapPutsTheOldDirBack(t *testing.T) {
	parent, out := oldDir(t)
	mustFail(t, swap(filepath.Join(parent, ".export.tmp-gone"), out), "swapping in a missing directory")
	assertDir(t, out, "old")
	assertEntries(t, parent, "export")
}

func TestWriteDirRefusesAFile(t *testing.T) {
	parent := t.TempDir()
	out := filepath.Join(parent, "export")
	must(t, os.WriteFile(out, []byte("mine"), 0o644))
	called := false
	if err := WriteDir(out, 0o755, func(string) error { called = true; return nil }); err == nil || called {
		t.Errorf("WriteDir over a file = %v (fill called: %v), want a refusal before any work", err, called)
	}
	if got, _ := os.ReadFile(out); string(got) != "mine" {
		t.Errorf("the file became %q", got)
	}
	assertEntries(t, parent, "export")
}
