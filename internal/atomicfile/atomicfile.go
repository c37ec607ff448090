// Package atomicfile writes files and directories whole or not at all
// (STYLE.md, "Every file hoist produces is written atomically"; DESIGN.md,
// "it never leaves a half-written store or flow"). A file is written to a
// temporary file in the same directory, synced, renamed over the target,
// and the directory synced; a directory is built beside the target and
// swapped in. On any error, the writer's own included, the temporary file
// or directory is removed and the target is left as it was.
package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteFile writes data to path atomically with permissions perm (see
// Write).
func WriteFile(path string, data []byte, perm os.FileMode) error {
	return Write(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// Write writes the file at path atomically with permissions perm: fill
// writes the content to a temporary file beside path, which is then synced
// and renamed over path. A reader sees the old file or the new one, never a
// part. When fill or any step fails, the temporary file is removed and the
// old file is left as it was; fill's error is returned as it is.
func Write(path string, perm os.FileMode, fill func(io.Writer) error) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			os.Remove(tmp)
		}
	}()
	// CreateTemp makes the file 0600; perm is set exactly, umask aside, as
	// a flow or a report asks.
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := fillSync(f, fill); err != nil {
		return wrap(path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("renaming into %s: %w", path, err)
	}
	syncDir(dir) // best effort: some file systems cannot sync a directory
	return nil
}

// WriteNew writes a new file at path, which must not exist, with fill, and
// syncs it; on error it removes it. It is for the files of a directory that
// WriteDir builds: that directory's rename makes them appear together, so
// each needs no rename of its own. The mode is perm less the umask, as
// os.WriteFile gives.
func WriteNew(path string, perm os.FileMode, fill func(io.Writer) error) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := fillSync(f, fill); err != nil {
		os.Remove(path)
		return wrap(path, err)
	}
	return nil
}

// fillErr marks an error that came from a fill, so that it is returned
// unwrapped: the caller's own words.
type fillErr struct{ err error }

func (e fillErr) Error() string { return e.err.Error() }

// fillSync lets fill write f, then syncs and closes it. It closes f in
// every case.
func fillSync(f *os.File, fill func(io.Writer) error) error {
	if err := fill(f); err != nil {
		f.Close()
		return fillErr{err}
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("syncing: %w", err)
	}
	return f.Close()
}

// wrap names path in an error of fillSync's, or returns a fill's error as
// it is.
func wrap(path string, err error) error {
	var fe fillErr
	if errors.As(err, &fe) {
		return fe.err
	}
	return fmt.Errorf("writing %s: %w", path, err)
}

// WriteDir writes the directory at path atomically with permissions perm:
// fill writes the content into a new directory beside path (the name it
// is given), whose files it must sync (WriteNew does); WriteDir syncs the
// directories of the tree and then puts it at path. When path does not
// exist, the new directory is renamed to it; when it does, the old one is
// moved aside, the new one renamed into its place, and the old one removed
// (put back when the rename fails). A reader sees the old tree or the new
// one, except for the instant between the two renames, when path is absent.
// On error, fill's included (returned as it is), the new directory is
// removed and the old one left as it was. A path that exists and is not a
// directory is refused before fill runs: whether an existing directory may
// be replaced is the caller's to decide.
func WriteDir(path string, perm os.FileMode, fill func(dir string) error) (err error) {
	path = filepath.Clean(path)
	if st, err := os.Lstat(path); err == nil && !st.IsDir() {
		return fmt.Errorf("writing %s: it exists and is not a directory", path)
	}
	parent := filepath.Dir(path)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(tmp)
		}
	}()
	if err := os.Chmod(tmp, perm); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := fill(tmp); err != nil {
		return err
	}
	if err := syncDirs(tmp); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return swap(tmp, path)
}

// swap puts the directory tmp at path, keeping path's old directory when
// it cannot.
func swap(tmp, path string) error {
	parent := filepath.Dir(path)
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		if err := os.Rename(tmp, path); err != nil {
			return fmt.Errorf("renaming into %s: %w", path, err)
		}
		syncDir(parent)
		return nil
	}
	old := tmp + ".old"
	if err := os.Rename(path, old); err != nil {
		return fmt.Errorf("moving the earlier %s aside: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		if rerr := os.Rename(old, path); rerr != nil {
			return fmt.Errorf("renaming into %s: %w (and the earlier one, at %s, could not be put back: %v)", path, err, old, rerr)
		}
		return fmt.Errorf("renaming into %s: %w", path, err)
	}
	syncDir(parent)
	if err := os.RemoveAll(old); err != nil {
		return fmt.Errorf("removing the earlier %s (moved to %s): %w", path, old, err)
	}
	return nil
}

// syncDirs syncs every directory of the tree at root (best effort, as
// syncDir), so that the entries fill made are on disk before the tree is
// renamed into place.
func syncDirs(root string) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			syncDir(p)
		}
		return err
	})
}

// syncDir syncs a directory, best effort: a rename is durable only once
// its directory is, and some file systems cannot sync one.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
