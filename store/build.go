package store

// A new store built whole, then put in place (issue 28): the first ingest
// into a path with no store yet writes every page once, into a file beside
// the path that no other process reads, and renames it into place when it
// is whole. Through the WAL every page was written twice: into the -wal,
// then by the checkpoint into the store.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/jmoiron/sqlx"

	"github.com/hoist-mcp/hoist/migrations"
)

// buildPragmas are set on the writer connection of a store being built:
// its rollback journal in memory (a fresh file's new pages are not
// journaled at all, and a rolled-back transaction still rolls back) and no
// fsync until the build is whole (Publish syncs once). A crash leaves a
// file nobody reads, which the next build of the path starts over.
const buildPragmas = "_journal_mode=MEMORY&_synchronous=OFF&_busy_timeout=5000&_foreign_keys=on"

// build is the state of a store being built by Build, until Publish.
type build struct {
	tmp  string   // the file being built, beside the store
	lock *os.File // tmp, held open and locked (flock) while it is built
	abs  string   // the store's absolute path
	all  []migrations.Migration
}

// buildPath is the file a store at abs is built in: hidden (ingest skips
// dot files among the logs) and named for the store, so that the next build
// of the same store finds what a crashed one left.
func buildPath(abs string) string {
	return filepath.Join(filepath.Dir(abs), "."+filepath.Base(abs)+".build")
}

// Build opens the store at path for a writer that fills it, as Open does,
// except when there is no store at path yet (no file, or an empty one):
// the store is then built in a hidden file beside path (.NAME.build),
// written without a write-ahead log, and is at path only once Publish
// renames it there, whole. Until then readers of path find no store, and a
// failed or interrupted build leaves none: Close removes the file, and a
// build killed before it could is started over by the next Build of the
// same path. A second Build of the path waits for the first to publish or
// give up, then opens what it left.
func Build(ctx context.Context, path string) (*DB, error) {
	all, err := migrations.All()
	if err != nil {
		return nil, fmt.Errorf("reading migrations: %w", err)
	}
	if path == "" {
		return nil, errors.New("opening store: no path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("opening store %s: %w", path, err)
	}
	if k, err := inspect(ctx, path, abs); err != nil {
		return nil, err
	} else if k != kindMissing && k != kindEmpty {
		return openWriter(ctx, path, all)
	}
	tmp := buildPath(abs)
	lock, err := lockBuild(ctx, path, tmp)
	if err != nil {
		return nil, err
	}
	// Under the lock: another build may have published while this one
	// waited, or a plain Open made the store.
	if k, err := inspect(ctx, path, abs); err != nil || (k != kindMissing && k != kindEmpty) {
		removeBuild(tmp)
		lock.Close()
		if err != nil {
			return nil, err
		}
		return openWriter(ctx, path, all)
	}
	if why := readOnly(abs); why != "" {
		removeBuild(tmp)
		lock.Close()
		return nil, &ReadOnlyError{Path: path, Reason: why}
	}
	// What a crashed build left is started over.
	if err := lock.Truncate(0); err != nil {
		removeBuild(tmp)
		lock.Close()
		return nil, fmt.Errorf("creating store %s: %w", path, err)
	}
	for _, s := range []string{"-journal", "-wal", "-shm"} {
		os.Remove(tmp + s)
	}
	b := &build{tmp: tmp, lock: lock, abs: abs, all: all}
	db, err := openBuild(ctx, path, b)
	if err != nil {
		removeBuild(tmp)
		lock.Close()
		return nil, err
	}
	return db, nil
}

// openBuild opens the connections of a store being built in b.tmp: the
// writer, which gives it its page size, mark and schema, and the read pool.
func openBuild(ctx context.Context, path string, b *build) (*DB, error) {
	db := &DB{path: path, latest: len(b.all), build: b}
	w, err := writerConn(path, uri(b.tmp, buildPragmas+"&mode=rw&_txlock=immediate"))
	if err != nil {
		return nil, err
	}
	db.w = w
	fail := func(err error) (*DB, error) {
		db.closePools()
		return nil, err
	}
	if _, err := w.ExecContext(ctx, fmt.Sprintf("PRAGMA page_size = %d", pageSize)); err != nil {
		return fail(classify(path, err))
	}
	if err := checkPragmas(ctx, w, false, false); err != nil {
		return fail(classify(path, err))
	}
	if err := db.migrate(ctx, b.all); err != nil {
		return fail(err)
	}
	r, err := sqlx.Open("sqlite3", uri(b.tmp, "_busy_timeout=5000&_foreign_keys=on&mode=ro&_query_only=1"))
	if err != nil {
		return fail(fmt.Errorf("opening store %s: %w", path, err))
	}
	n := max(2, runtime.GOMAXPROCS(0))
	r.SetMaxOpenConns(n)
	r.SetMaxIdleConns(n)
	db.r = r
	if err := checkPragmas(ctx, r, false, true); err != nil {
		return fail(classify(path, err))
	}
	return db, nil
}

// Publish puts a store Build built at its path: it switches the store to
// WAL, as every store is, syncs it to disk, renames it into place and
// reopens it there as Open would, so that db reads and writes the store at
// its path afterwards. It refuses, leaving the build to Close, when a
// store appeared at the path meanwhile (made by something other than a
// Build). For a store Build opened with Open, it does nothing.
func (db *DB) Publish(ctx context.Context) error {
	b := db.build
	if b == nil {
		return nil
	}
	if db.r != nil {
		if err := db.r.Close(); err != nil {
			return fmt.Errorf("opening store %s: %w", db.path, err)
		}
		db.r = nil
	}
	var mode string
	if err := db.w.GetContext(ctx, &mode, "PRAGMA journal_mode = WAL"); err != nil {
		return classify(db.path, fmt.Errorf("switching the store to WAL: %w", err))
	}
	if mode != "wal" {
		return fmt.Errorf("store %s: switching it to WAL left it in %s mode", db.path, mode)
	}
	// Closing the last connection checkpoints the -wal the switch made, and
	// removes it and the -shm.
	if err := db.w.Close(); err != nil {
		return classify(db.path, err)
	}
	db.w = nil
	if err := b.lock.Sync(); err != nil {
		return fmt.Errorf("writing store %s: %w", db.path, err)
	}
	if fi, err := os.Lstat(b.abs); err == nil && fi.Size() > 0 {
		return fmt.Errorf("store %s: another program made a store at the path while this one was built; run the ingest again to add to it", db.path)
	}
	if err := os.Rename(b.tmp, b.abs); err != nil {
		return fmt.Errorf("creating store %s: %w", db.path, err)
	}
	syncDir(filepath.Dir(b.abs))
	db.build = nil
	b.lock.Close()
	o, err := openWriter(ctx, db.path, b.all)
	if err != nil {
		return err
	}
	db.w, db.r, db.version = o.w, o.r, o.version
	return nil
}

// closeBuild abandons a build not published: its file goes, and with it
// the lock a waiting Build holds on to.
func (db *DB) closeBuild() {
	if b := db.build; b != nil {
		removeBuild(b.tmp)
		b.lock.Close()
		db.build = nil
	}
}

// removeBuild removes a build's file and what SQLite may have left beside
// it.
func removeBuild(tmp string) {
	for _, s := range []string{"", "-journal", "-wal", "-shm"} {
		os.Remove(tmp + s)
	}
}

// syncDir makes a rename in dir durable; where a directory cannot be
// synced, the rename is as durable as the file system makes it.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
