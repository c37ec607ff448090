package store

// What is at a store's path, decided before SQLite writes a byte to it
// (the issue filed after a new user's trial): hoist never writes into a
// database another program made, and reading never makes, marks or
// upgrades a store.

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/jmoiron/sqlx"
	sqlite3 "github.com/mattn/go-sqlite3"

	"github.com/hoist-mcp/hoist/migrations"
)

// ApplicationID is the mark every store carries in its SQLite header
// (PRAGMA application_id): the four ASCII bytes "hois", 0x686f6973
// (1752134003). SQLite keeps the number for exactly this, so that a
// program can tell its own files from others' before it opens them; with
// it hoist refuses any other SQLite file, and `file(1)` or `sqlite3`
// can tell a store for what it is. The schema version goes beside it, in
// PRAGMA user_version, kept in step with schema_migrations.
const ApplicationID = 0x686f6973

// sqliteMagic opens every SQLite database file.
var sqliteMagic = []byte("SQLite format 3\x00")

// kind is what inspect found at a store's path.
type kind int

const (
	kindMissing  kind = iota // nothing there
	kindEmpty                // a file of 0 bytes: it may become a store
	kindStore                // a store: the mark is in its header
	kindUnmarked             // a store from a hoist before the mark: hoist's own schema_migrations, no mark
)

// NoStoreError is returned by OpenReadOnly when there is no store to read
// at the path: nothing there, an empty file, or a store that was never
// given its schema. Reading never makes a store.
type NoStoreError struct {
	Path  string
	Empty bool // a file is there, with nothing in it
}

func (e *NoStoreError) Error() string {
	what := ""
	if e.Empty {
		what = " (nothing in the file yet)"
	}
	return fmt.Sprintf("no store at %s%s: ingest logs into it first (hoist ingest --sessions DIR --store %s)", e.Path, what, e.Path)
}

// Unwrap makes a NoStoreError an fs.ErrNotExist.
func (e *NoStoreError) Unwrap() error { return fs.ErrNotExist }

// NotStoreError is returned for a file that is not a hoist store: not an
// SQLite database, or another program's. The file is left as it was.
type NotStoreError struct {
	Path          string
	SQLite        bool  // an SQLite database: another program made it
	ApplicationID int32 // its PRAGMA application_id, as SQLite reports it
	Tables        int
}

func (e *NotStoreError) Error() string {
	if !e.SQLite {
		return fmt.Sprintf("opening store %s: not a hoist store: it is not an SQLite database; pass another --store", e.Path)
	}
	tables := "tables"
	if e.Tables == 1 {
		tables = "table"
	}
	return fmt.Sprintf("opening store %s: not a hoist store: it is an SQLite database made by another program (application_id %d, %d %s); pass another --store",
		e.Path, e.ApplicationID, e.Tables, tables)
}

// DamagedError is returned for a store SQLite cannot read: cut short, or
// overwritten. Everything in a store comes from the logs, so the way out is
// to ingest them again into a new one.
type DamagedError struct {
	Path string
	Err  error // what SQLite (or the header check) said
}

func (e *DamagedError) Error() string {
	return fmt.Sprintf("store %s is damaged (%v); it holds nothing the logs don't: move it away and run `hoist ingest --sessions DIR --store %s` to rebuild it",
		e.Path, e.Err, e.Path)
}

func (e *DamagedError) Unwrap() error { return e.Err }

// ReadOnlyError is returned when a store must be written and cannot be: its
// file, its directory (where SQLite keeps the -wal and -shm files beside
// it) or its file system is read-only, or it was opened with
// OpenReadOnly.
type ReadOnlyError struct {
	Path   string
	Reason string // "the file is not writable", "opened for reading", …
	Err    error  // SQLite's error, when it was SQLite that refused
}

func (e *ReadOnlyError) Error() string {
	return fmt.Sprintf("store %s is read-only (%s): this command writes to it; make it writable, or pass another --store", e.Path, e.Reason)
}

func (e *ReadOnlyError) Unwrap() error { return e.Err }

// OlderSchemaError is returned by a read of a store opened with
// OpenReadOnly whose schema is older than this hoist's and lacks what the
// read needs. Reading never migrates; writing (hoist ingest) does.
type OlderSchemaError struct {
	Path          string
	Store, Binary int
	Err           error // SQLite's "no such table" or "no such column"
}

func (e *OlderSchemaError) Error() string {
	return fmt.Sprintf("store %s has schema version %d and this hoist reads version %d (%v): run `hoist ingest --store %s` to upgrade it",
		e.Path, e.Store, e.Binary, e.Err, e.Path)
}

func (e *OlderSchemaError) Unwrap() error { return e.Err }

// denied is a permission problem met while opening the store at path.
func denied(path, what string) error {
	return fmt.Errorf("opening store %s: %w (%s)", path, fs.ErrPermission, what)
}

// inspect says what is at path (abs, absolute) without writing anything or
// creating a file beside it: first from the 100-byte SQLite header, then,
// for a database without the mark, from its schema (probe).
func inspect(ctx context.Context, path, abs string) (kind, error) {
	fi, err := os.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return kindMissing, nil
	case errors.Is(err, fs.ErrPermission):
		return 0, denied(path, "a directory on its path cannot be searched")
	case err != nil:
		return 0, fmt.Errorf("opening store %s: %w", path, err)
	case fi.IsDir():
		return 0, fmt.Errorf("opening store %s: it is a directory; name the store's file", path)
	case fi.Size() == 0:
		return kindEmpty, nil
	}
	f, err := os.Open(abs)
	if errors.Is(err, fs.ErrPermission) {
		return 0, denied(path, "the file cannot be read")
	} else if err != nil {
		return 0, fmt.Errorf("opening store %s: %w", path, err)
	}
	hdr := make([]byte, 100)
	n, err := io.ReadFull(f, hdr)
	f.Close()
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return 0, fmt.Errorf("opening store %s: reading its header: %w", path, err)
	}
	if n < len(sqliteMagic) || !bytes.Equal(hdr[:len(sqliteMagic)], sqliteMagic) {
		return 0, &NotStoreError{Path: path}
	}
	if n < len(hdr) {
		return 0, &DamagedError{Path: path, Err: fmt.Errorf("%d bytes, cut inside the %d-byte SQLite header", n, len(hdr))}
	}
	if binary.BigEndian.Uint32(hdr[68:72]) == ApplicationID {
		return kindStore, nil
	}
	return probe(ctx, path, abs)
}

// probe looks inside an SQLite database whose header lacks the mark: a
// store from a hoist before the mark, a store whose mark is still in its
// -wal, or another program's database. It reads through a connection that
// can neither write nor create a file: mode=ro over the -wal and -shm when
// a writer left them (a read-only connection cannot take them away, so it
// must not make them), else immutable=1, which reads the file as it is.
func probe(ctx context.Context, path, abs string) (kind, error) {
	q := "mode=ro"
	if !exists(abs+"-wal") || !exists(abs+"-shm") {
		q += "&immutable=1"
	}
	c, err := sqlx.Open("sqlite3", uri(abs, q))
	if err != nil {
		return 0, fmt.Errorf("opening store %s: %w", path, err)
	}
	defer c.Close()
	c.SetMaxOpenConns(1)
	var app int32
	if err := c.GetContext(ctx, &app, "PRAGMA application_id"); err != nil {
		return 0, classify(path, err)
	}
	if uint32(app) == ApplicationID {
		return kindStore, nil
	}
	tables, err := userTables(ctx, c)
	if err != nil {
		return 0, classify(path, err)
	}
	if app == 0 && slices.Contains(tables, "schema_migrations") {
		ok, err := hoistMigrations(ctx, c)
		if err != nil {
			return 0, classify(path, err)
		}
		if ok {
			return kindUnmarked, nil
		}
	}
	return 0, &NotStoreError{Path: path, SQLite: true, ApplicationID: app, Tables: len(tables)}
}

// userTables lists the tables of a database, SQLite's own left out.
func userTables(ctx context.Context, q sqlx.QueryerContext) ([]string, error) {
	var names []string
	err := sqlx.SelectContext(ctx, q, &names, `SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY name`)
	return names, err
}

// hoistMigrations reports whether a database's schema_migrations is the
// table hoist writes, not another tool's of the same name (golang-migrate,
// Rails): its three columns, and for every version this hoist knows, the
// name of its embedded migration file.
func hoistMigrations(ctx context.Context, q sqlx.QueryerContext) (bool, error) {
	var cols []string
	if err := sqlx.SelectContext(ctx, q, &cols, "SELECT name FROM pragma_table_info('schema_migrations') ORDER BY cid"); err != nil {
		return false, err
	}
	if !slices.Equal(cols, []string{"version", "name", "applied_unix_ms"}) {
		return false, nil
	}
	var rows []struct {
		Version int    `db:"version"`
		Name    string `db:"name"`
	}
	if err := sqlx.SelectContext(ctx, q, &rows, "SELECT version, name FROM schema_migrations"); err != nil {
		return false, err
	}
	all, err := migrations.All()
	if err != nil {
		return false, err
	}
	for _, r := range rows {
		if r.Version < 1 || (r.Version <= len(all) && all[r.Version-1].Name != r.Name) {
			return false, nil
		}
	}
	return true, nil
}

// pageSize is the page size of a new store. An episode is one document on
// its row, tens of kilobytes: with SQLite's default 4 KiB pages each spans
// a chain of overflow pages, read and written one system call each. With
// 16 KiB pages an ingest of τ²-bench's logs made 4,619 page reads and
// writes instead of 13,972, and in alternating runs against 4 KiB stores
// used 0.89× the CPU (τ²-bench's logs) and 0.96× (300 generated sessions)
// to ingest, 0.95× to export. A store made before keeps its pages: SQLite
// changes them only by a VACUUM, which nothing here runs.
const pageSize = 16 << 10

// stamp marks an empty file as a store before SQLite writes anything else
// to it, so that the file never holds SQLite pages without the mark: a
// second hoist opening it at that moment would take it for another
// program's. It runs in SQLite's rollback-journal mode; the writer's DSN
// switches the store to WAL after. Its first write also fixes the store's
// page size (pageSize).
func stamp(ctx context.Context, path, abs string) error {
	c, err := sqlx.Open("sqlite3", uri(abs, "mode=rw&_busy_timeout=5000&_txlock=immediate"))
	if err != nil {
		return fmt.Errorf("opening store %s: %w", path, err)
	}
	defer c.Close()
	c.SetMaxOpenConns(1)
	// Before the file's first page: a store another hoist stamped a moment
	// ago keeps the size it has, the pragma is then a no-op.
	if _, err := c.ExecContext(ctx, fmt.Sprintf("PRAGMA page_size = %d", pageSize)); err != nil {
		return classify(path, err)
	}
	err = func() error {
		tx, err := c.BeginTxx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		var app int32
		if err := tx.GetContext(ctx, &app, "PRAGMA application_id"); err != nil {
			return err
		}
		if uint32(app) == ApplicationID {
			return nil // another hoist stamped it a moment ago
		}
		tables, err := userTables(ctx, tx)
		if err != nil {
			return err
		}
		if app != 0 || len(tables) > 0 {
			// Another program wrote to the file since it was empty.
			return &NotStoreError{Path: path, SQLite: true, ApplicationID: app, Tables: len(tables)}
		}
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA application_id = %d", ApplicationID)); err != nil {
			return err
		}
		return tx.Commit()
	}()
	if err != nil {
		return classify(path, err)
	}
	if err := c.Close(); err != nil {
		return classify(path, err)
	}
	return nil
}

// known turns the SQLite errors a person can act on into errors that name
// the store at path and say what to do; it returns nil for any other.
func known(path string, err error) error {
	var se sqlite3.Error
	if !errors.As(err, &se) {
		return nil
	}
	switch se.Code {
	case sqlite3.ErrCorrupt, sqlite3.ErrNotADB:
		return &DamagedError{Path: path, Err: se}
	case sqlite3.ErrReadonly:
		return &ReadOnlyError{Path: path, Reason: se.Error(), Err: se}
	case sqlite3.ErrCantOpen, sqlite3.ErrPerm:
		if se.SystemErrno == syscall.EACCES || se.SystemErrno == syscall.EPERM {
			return denied(path, se.Error())
		}
	}
	return nil
}

// classify is known's error for err, or err in the context of opening the
// store at path. The errors this package made itself pass unchanged.
func classify(path string, err error) error {
	if k := known(path, err); k != nil {
		return k
	}
	var (
		ns *NotStoreError
		nw *NewerSchemaError
		ne *NoStoreError
	)
	if errors.As(err, &ns) || errors.As(err, &nw) || errors.As(err, &ne) {
		return err
	}
	return fmt.Errorf("opening store %s: %w", path, err)
}

// olderSchema reports a read that failed for want of a table or column a
// later migration adds, on a store read without migrating it.
func (db *DB) olderSchema(err error) error {
	var se sqlite3.Error
	if db.w != nil || db.version >= db.latest || !errors.As(err, &se) || se.Code != sqlite3.ErrError {
		return err
	}
	if msg := se.Error(); strings.HasPrefix(msg, "no such table") || strings.HasPrefix(msg, "no such column") {
		return &OlderSchemaError{Path: db.path, Store: db.version, Binary: db.latest, Err: se}
	}
	return err
}

// exists reports whether anything is at path.
func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// readOnly says why this process may not write the store at abs, or ""
// when it may. The directory counts: SQLite keeps a store's -wal and -shm
// files beside it, and a writer must be able to make them.
func readOnly(abs string) string {
	for _, p := range []struct{ path, what string }{{abs, "the file"}, {filepath.Dir(abs), "its directory"}} {
		switch writeDenied(p.path) {
		case "read-only file system":
			return "its file system is read-only"
		case "permission denied":
			return p.what + " is not writable"
		}
	}
	return ""
}
