package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/migrations"
)

// snapshot is a file's bytes and the SQLite files beside it, to say a call
// left it alone.
type snapshot struct {
	sum      [32]byte
	sidecars string
}

func snap(t *testing.T, path string) snapshot {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var side []string
	for _, s := range []string{"-wal", "-shm", "-journal"} {
		if _, err := os.Lstat(path + s); err == nil {
			side = append(side, s)
		}
	}
	return snapshot{sha256.Sum256(b), fmt.Sprint(side)}
}

func checkSame(t *testing.T, path string, before snapshot, what string) {
	t.Helper()
	if after := snap(t, path); after != before {
		t.Errorf("%s: %s changed (sidecars before %s, after %s)", what, filepath.Base(path), before.sidecars, after.sidecars)
	}
}

// foreign opens the SQLite file at path as another program would.
func foreign(t *testing.T, path string) *sqlx.DB {
	t.Helper()
	c, err := sqlx.Open("sqlite3", uri(path, "_busy_timeout=5000"))
	if err != nil {
		t.Fatal(err)
	}
	c.SetMaxOpenConns(1)
	t.Cleanup(func() { c.Close() })
	return c
}

func execAll(t *testing.T, c *sqlx.DB, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if _, err := c.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// header reads the application_id and user_version from a closed
// store's file.
func header(t *testing.T, path string) (app, version int32) {
	t.Helper()
	c, err := sqlx.Open("sqlite3", uri(path, "mode=ro&immutable=1"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Get(&app, "PRAGMA application_id"); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(&version, "PRAGMA user_version"); err != nil {
		t.Fatal(err)
	}
	return app, version
}

// makeUnmarked writes the store a hoist before the mark made: WAL,
// schema_migrations and the first n migrations, no application_id.
func makeUnmarked(t *testing.T, path string, n int) {
	t.Helper()
	all, err := migrations.All()
	if err != nil {
		t.Fatal(err)
	}
	c := foreign(t, path)
	execAll(t, c, "PRAGMA journal_mode=WAL", `CREATE TABLE schema_migrations (
		version INTEGER PRIMARY KEY,
		name TEXT NOT NULL,
		applied_unix_ms INTEGER NOT NULL
	)`)
	for _, m := range all[:n] {
		execAll(t, c, m.SQL)
		if _, err := c.Exec("INSERT INTO schema_migrations VALUES (?, ?, 0)", m.Version, m.Name); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}

func closeIfOpen(db *DB) {
	if db != nil {
		db.Close()
	}
}

func TestOpenMarksTheStore(t *testing.T) {
	db, path := openTemp(t)
	db.Close()
	app, v := header(t, path)
	if uint32(app) != ApplicationID || int(v) != migrations.Latest() {
		t.Errorf("application_id %#x, user_version %d; want %#x, %d", app, v, ApplicationID, migrations.Latest())
	}
	// The first bytes SQLite wrote already carried the mark: the header on
	// disk has it, not only the -wal.
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b[68:72], []byte("hois")) {
		t.Errorf("header bytes 68-71 = %q, want \"hois\"", b[68:72])
	}
}

// A new store has 16 KiB pages (the header's bytes 16–17, big-endian):
// an episode's document spans a few pages rather than many, and an ingest
// makes a third of the page writes and reads it made with 4 KiB.
func TestNewStorePageSize(t *testing.T) {
	db, path := openTemp(t)
	db.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if size := int(b[16])<<8 | int(b[17]); size != pageSize {
		t.Errorf("page size %d, want %d", size, pageSize)
	}
}

func TestUserVersionFollowsMigrations(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "hoist.db")
	all, err := migrations.All()
	if err != nil {
		t.Fatal(err)
	}
	for n := 1; n <= len(all); n++ {
		db, err := openWriter(ctx, path, all[:n])
		if err != nil {
			t.Fatal(err)
		}
		db.Close()
		if _, v := header(t, path); int(v) != n {
			t.Errorf("after %d migrations: user_version %d", n, v)
		}
	}
}

func TestUnmarkedStoreIsReadAndMarkedOnWrite(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "hoist.db")
	makeUnmarked(t, path, migrations.Latest())
	before := snap(t, path)

	r, err := OpenReadOnly(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if ss, err := r.Sessions(ctx, episode.Filter{}); err != nil || len(ss) != 0 {
		t.Errorf("Sessions of an unmarked store = %v, %v", ss, err)
	}
	r.Close()
	checkSame(t, path, before, "reading an unmarked store")

	w, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Put(ctx, Unit{Episodes: []*episode.Episode{sample("s", time.Now())}}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if app, v := header(t, path); uint32(app) != ApplicationID || int(v) != migrations.Latest() {
		t.Errorf("after a write: application_id %#x, user_version %d", app, v)
	}
}

func TestForeignDatabasesRefused(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		stmts []string
		want  NotStoreError
	}{
		{"a table", []string{"CREATE TABLE t(x)"}, NotStoreError{SQLite: true, Tables: 1}},
		{"its own application_id", []string{"PRAGMA application_id = -5", "CREATE TABLE a(x)", "CREATE TABLE b(x)"}, NotStoreError{SQLite: true, ApplicationID: -5, Tables: 2}},
		{"another tool's schema_migrations", []string{"CREATE TABLE schema_migrations (version bigint NOT NULL PRIMARY KEY, dirty boolean NOT NULL)", "INSERT INTO schema_migrations VALUES (3, 0)"},
			NotStoreError{SQLite: true, Tables: 1}},
		{"hoist's columns with other names", []string{"CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_unix_ms INTEGER NOT NULL)",
			"INSERT INTO schema_migrations VALUES (1, '20240101_users.sql', 0)"}, NotStoreError{SQLite: true, Tables: 1}},
		{"no tables", []string{"PRAGMA user_version = 3"}, NotStoreError{SQLite: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "other.db")
			c := foreign(t, path)
			execAll(t, c, tc.stmts...)
			c.Close()
			before := snap(t, path)
			for name, open := range map[string]func(context.Context, string) (*DB, error){"Open": Open, "OpenReadOnly": OpenReadOnly} {
				db, err := open(ctx, path)
				var ne *NotStoreError
				if !errors.As(err, &ne) {
					closeIfOpen(db)
					t.Fatalf("%s: %v, want a NotStoreError", name, err)
				}
				want := tc.want
				want.Path = path
				if *ne != want {
					t.Errorf("%s: %+v, want %+v", name, *ne, want)
				}
				checkSame(t, path, before, name)
			}
		})
	}
}

func TestOpenReadOnlyNeverWrites(t *testing.T) {
	ctx := context.Background()
	db, path := openTemp(t)
	if _, err := db.Put(ctx, Unit{Episodes: []*episode.Episode{sample("s", time.Now())}}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	before := snap(t, path)

	r, err := OpenReadOnly(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if ss, err := r.Sessions(ctx, episode.Filter{}); err != nil || len(ss) != 1 {
		t.Errorf("Sessions = %v, %v", ss, err)
	}
	_, err = r.Put(ctx, Unit{Episodes: []*episode.Episode{sample("t", time.Now())}})
	var ro *ReadOnlyError
	if !errors.As(err, &ro) || ro.Path != path {
		t.Errorf("Put on a store opened for reading: %v, want a ReadOnlyError naming it", err)
	}
	if _, err := r.r.ExecContext(ctx, "DELETE FROM episodes"); err == nil {
		t.Error("a reader's connection accepted a write")
	}
	r.Close()
	checkSame(t, path, before, "reading")

	missing := filepath.Join(t.TempDir(), "sub", "none.db")
	var ns *NoStoreError
	if _, err := OpenReadOnly(ctx, missing); !errors.As(err, &ns) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("OpenReadOnly of a missing store: %v", err)
	}
	if _, err := os.Stat(filepath.Dir(missing)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("OpenReadOnly made a directory: %v", err)
	}
	empty := filepath.Join(t.TempDir(), "empty.db")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenReadOnly(ctx, empty); !errors.As(err, &ns) || !ns.Empty {
		t.Errorf("OpenReadOnly of an empty file: %v", err)
	}
	if fi, err := os.Stat(empty); err != nil || fi.Size() != 0 {
		t.Errorf("OpenReadOnly wrote into an empty file: %v, %v", fi, err)
	}
}

// The ways a reader reaches a store it may not write, opened on purpose so
// that they are covered when the tests run as root, whom file modes do not
// bind: with no -wal beside the store, immutable=1; with one, mode=ro over
// it. Neither leaves a file.
func TestReaderWithoutWriteAccess(t *testing.T) {
	ctx := context.Background()
	db, path := openTemp(t)
	if _, err := db.Put(ctx, Unit{Episodes: []*episode.Episode{sample("s", time.Now())}}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	before := snap(t, path)
	r, err := openReader(ctx, path, uri(path, readPragmas+"&mode=ro&immutable=1"))
	if err != nil {
		t.Fatal(err)
	}
	if ss, err := r.Sessions(ctx, episode.Filter{}); err != nil || len(ss) != 1 {
		t.Errorf("Sessions through immutable=1 = %v, %v", ss, err)
	}
	r.Close()
	checkSame(t, path, before, "reading with immutable=1")

	// A writer holds the store open, so its -wal and -shm are there; a
	// reader that may not write reads through them, sees what the writer
	// committed, and leaves them to the writer.
	w, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Put(ctx, Unit{Episodes: []*episode.Episode{sample("t", time.Now())}}); err != nil {
		t.Fatal(err)
	}
	if got := readMode(path); got != "&mode=rw" {
		t.Errorf("readMode of a writable store = %q", got)
	}
	r, err = openReader(ctx, path, uri(path, readPragmas+"&mode=ro"))
	if err != nil {
		t.Fatal(err)
	}
	if ss, err := r.Sessions(ctx, episode.Filter{}); err != nil || len(ss) != 2 {
		t.Errorf("Sessions beside a writer = %d, %v; want 2", len(ss), err)
	}
	r.Close()
	w.Close()
	if side := snap(t, path).sidecars; side != "[]" {
		t.Errorf("left %s beside the store", side)
	}
}

func TestOlderSchemaReadWithoutMigrating(t *testing.T) {
	ctx := context.Background()
	all, err := migrations.All()
	if err != nil {
		t.Fatal(err)
	}

	t.Run("a read the old schema cannot answer", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "hoist.db")
		db, err := openWriter(ctx, path, all[:1])
		if err != nil {
			t.Fatal(err)
		}
		db.Close()
		before := snap(t, path)
		r, err := OpenReadOnly(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if r.SchemaVersion() != 1 {
			t.Errorf("SchemaVersion() = %d, want 1", r.SchemaVersion())
		}
		_, err = r.Sessions(ctx, episode.Filter{})
		var oe *OlderSchemaError
		if !errors.As(err, &oe) || oe.Path != path || oe.Store != 1 || oe.Binary != migrations.Latest() {
			t.Errorf("Sessions of a schema-1 store: %v, want an OlderSchemaError", err)
		}
		r.Close()
		checkSame(t, path, before, "reading a schema-1 store")
	})

	t.Run("reads that work", func(t *testing.T) {
		// A store whose last migration is not recorded, though the reads
		// have what they need: it is read as it is, and stays as it was.
		db, path := openTemp(t)
		if _, err := db.Put(ctx, Unit{Episodes: []*episode.Episode{sample("s", time.Now())}}); err != nil {
			t.Fatal(err)
		}
		if _, err := db.w.Exec("DELETE FROM schema_migrations WHERE version = ?", migrations.Latest()); err != nil {
			t.Fatal(err)
		}
		db.Close()
		before := snap(t, path)
		r, err := OpenReadOnly(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		if r.SchemaVersion() != migrations.Latest()-1 {
			t.Errorf("SchemaVersion() = %d", r.SchemaVersion())
		}
		if ss, err := r.Sessions(ctx, episode.Filter{}); err != nil || len(ss) != 1 {
			t.Errorf("Sessions = %v, %v", ss, err)
		}
		r.Close()
		checkSame(t, path, before, "reading an older store")
	})
}

func TestDamagedStoreRefused(t *testing.T) {
	ctx := context.Background()
	db, good := openTemp(t)
	if _, err := db.Put(ctx, Unit{Episodes: []*episode.Episode{sample("s", time.Now())}}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	b, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		bytes []byte
	}{
		{"header then garbage", append([]byte("SQLite format 3\x00"), bytes.Repeat([]byte{0xa5}, 5000)...)},
		{"cut in half", b[:len(b)/2]},
		{"cut inside the header", b[:40]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "hoist.db")
			if err := os.WriteFile(path, tc.bytes, 0o600); err != nil {
				t.Fatal(err)
			}
			before := snap(t, path)
			for name, open := range map[string]func(context.Context, string) (*DB, error){"Open": Open, "OpenReadOnly": OpenReadOnly} {
				db, err := open(ctx, path)
				var de *DamagedError
				if !errors.As(err, &de) || de.Path != path {
					closeIfOpen(db)
					t.Errorf("%s: %v, want a DamagedError", name, err)
				}
				checkSame(t, path, before, name)
			}
		})
	}
}

func TestConcurrentOpenOfEmptyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hoist.db")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			db, err := Open(context.Background(), path)
			if err == nil {
				err = db.Close()
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("open %d: %v", i, err)
		}
	}
	if app, v := header(t, path); uint32(app) != ApplicationID || int(v) != migrations.Latest() {
		t.Errorf("application_id %#x, user_version %d", app, v)
	}
}
