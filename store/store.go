// Package store is hoist's episode store: one SQLite file, reached through
// mattn/go-sqlite3 and sqlx, that every command reads episodes from
// (DESIGN.md, "Store"). It is the only package that speaks SQL.
//
// A store marks itself: ApplicationID in the SQLite header, the schema
// version in user_version. Before SQLite writes a byte, Open and
// OpenReadOnly look at what is at the path, and refuse a file that is not a
// store (another program's database is never written to), a damaged store
// and, for reading, a missing one.
//
// Open is for commands that write (ingest). It makes a missing or empty
// file a store, checks the per-connection pragmas the DSN sets (WAL, a busy
// timeout, foreign keys), applies the embedded migrations each in its own
// transaction, and refuses a store written by a newer hoist. Its DB holds
// one writer connection, whose transactions take the write lock at BEGIN
// (_txlock=immediate) so that two processes writing at once queue on the
// busy timeout instead of failing, and a pool of read-only connections.
//
// Build is Open for hoist ingest: a store that does not exist yet is built
// in a file beside its path and renamed there whole by Publish, each page
// written once, where through the WAL it is written twice.
//
// OpenReadOnly is for commands that only read. It never creates, marks or
// migrates a store, works on a read-only file or directory, and leaves no
// file beside the store. A store older than the binary is read as it is;
// a read that needs a newer schema fails with an OlderSchemaError.
//
// Every exported method is one transaction.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	sqlite3 "github.com/mattn/go-sqlite3"

	"github.com/hoist-mcp/hoist/migrations"
)

// BusyTimeout is how long a connection waits for another's lock.
const BusyTimeout = 5 * time.Second

// pragmas are set on every writer connection by the DSN (STYLE.md,
// "SQLite").
const pragmas = "_journal_mode=WAL&_busy_timeout=5000&_foreign_keys=on&_synchronous=NORMAL"

// readPragmas are set on every connection of OpenReadOnly. The journal
// mode is the store's own (WAL, set by its writer): a reader sets none, as
// switching it would write.
const readPragmas = "_busy_timeout=5000&_foreign_keys=on&_query_only=1"

// DB is an open episode store. It is safe for concurrent use; Close once.
type DB struct {
	path    string
	w       *sqlx.DB // exactly one connection: SQLite has one writer; nil from OpenReadOnly
	r       *sqlx.DB // read-only pool
	version int      // the store's schema version
	latest  int      // the binary's
	build   *build   // a store Build is building, until Publish; else nil
}

// NewerSchemaError is returned by Open for a store written by a newer hoist.
type NewerSchemaError struct {
	Path          string
	Store, Binary int
}

func (e *NewerSchemaError) Error() string {
	return fmt.Sprintf("store %s was written by a newer hoist (schema version %d; this hoist knows versions up to %d): upgrade hoist, or use another --store",
		e.Path, e.Store, e.Binary)
}

// uri returns the file: URI for the absolute path abs with the query q, so
// that mode=ro and immutable=1 work, with the characters URI parsing would
// take escaped.
func uri(abs string, q string) string {
	r := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23")
	return "file:" + r.Replace(abs) + "?" + q
}

// Open opens the store at path for writing, creating it (and its
// directory) when missing or making an empty file one, and brings its
// schema up to date; a store from a hoist before the mark gets it. It
// refuses, leaving the file as it was, a file that is not a hoist store
// (NotStoreError), a damaged store (DamagedError), a store it may not write
// (ReadOnlyError) and one from a newer hoist (NewerSchemaError).
//
// Several processes may open one new store at once: switching a new file
// to WAL can report it busy without waiting, so Open tries again for a
// while.
func Open(ctx context.Context, path string) (*DB, error) {
	all, err := migrations.All()
	if err != nil {
		return nil, fmt.Errorf("reading migrations: %w", err)
	}
	return openWriter(ctx, path, all)
}

// openWriter is Open with the migrations to apply, so that tests can make
// the store an older hoist would have made.
func openWriter(ctx context.Context, path string, all []migrations.Migration) (*DB, error) {
	var err error
	for attempt := 1; ; attempt++ {
		var db *DB
		db, err = open(ctx, path, all)
		if err == nil || !isBusy(err) || attempt == 40 {
			return db, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Duration(attempt) * 10 * time.Millisecond):
		}
	}
}

func open(ctx context.Context, path string, all []migrations.Migration) (*DB, error) {
	if path == "" {
		return nil, errors.New("opening store: no path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("opening store %s: %w", path, err)
	}
	k, err := inspect(ctx, path, abs)
	if err != nil {
		return nil, err
	}
	if k == kindMissing {
		if err := create(path, abs); err != nil {
			return nil, err
		}
	} else if why := readOnly(abs); why != "" {
		return nil, &ReadOnlyError{Path: path, Reason: why}
	}
	if k == kindMissing || k == kindEmpty {
		if err := stamp(ctx, path, abs); err != nil {
			return nil, err
		}
	}
	db := &DB{path: path, latest: len(all)}
	w, err := writerConn(path, uri(abs, pragmas+"&_txlock=immediate"))
	if err != nil {
		return nil, err
	}
	db.w = w
	if err := checkPragmas(ctx, w, true, false); err != nil {
		db.Close()
		return nil, classify(path, err)
	}
	if err := db.migrate(ctx, all); err != nil {
		db.Close()
		return nil, err
	}
	r, err := sqlx.Open("sqlite3", uri(abs, pragmas+"&mode=ro&_query_only=1"))
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("opening store %s: %w", path, err)
	}
	n := max(2, runtime.GOMAXPROCS(0))
	r.SetMaxOpenConns(n)
	r.SetMaxIdleConns(n)
	db.r = r
	if err := checkPragmas(ctx, r, true, true); err != nil {
		db.Close()
		return nil, classify(path, err)
	}
	return db, nil
}

// writerConn opens the one connection that writes the store at path,
// reached by the URI u.
func writerConn(path, u string) (*sqlx.DB, error) {
	w, err := sqlx.Open("sqlite3", u)
	if err != nil {
		return nil, fmt.Errorf("opening store %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	return w, nil
}

// create makes the missing store file, never its directory: a mistyped
// path must not leave a tree of folders behind. The store holds what the
// logs hold, so it is private as they are (0600); SQLite gives its -wal and
// -shm files the same mode.
func create(path, abs string) error {
	f, err := os.OpenFile(abs, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	switch {
	case err == nil:
		return f.Close()
	case errors.Is(err, os.ErrExist):
		return nil // another process made it a moment ago; stamp sees to it
	case errors.Is(err, os.ErrPermission):
		return fmt.Errorf("creating store %s: %w (its directory is not writable)", path, os.ErrPermission)
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("creating store %s: no directory %s: %w", path, filepath.Dir(path), os.ErrNotExist)
	}
	return fmt.Errorf("creating store %s: %w", path, err)
}

// OpenReadOnly opens the store at path for reading only: it never creates,
// marks or migrates a store. A store older than this hoist is read as it
// is; a read that needs what a later migration adds returns an
// OlderSchemaError. Besides Open's refusals, it returns a NoStoreError when
// there is no store at path.
//
// Readers leave no file beside the store. Where this process may write
// beside it, the connections are read-write with query_only set: SQLite
// makes the -wal and -shm it needs to read alongside a running ingest, and
// the last connection to close takes them away (a read-only connection
// could make them but not remove them). Where it may not, they use the
// -wal and -shm a writer left, or, when there are none, read the file with
// immutable=1, with no lock and no file of their own. immutable=1 trusts
// that nobody writes the file meanwhile, which holds for a store on
// read-only media or in a directory nobody writes; a writer that starts
// during a long read (its owner's ingest, into a store this user may only
// read) could make the read see a torn page, reported as a damaged store,
// and reading again is the cure.
func OpenReadOnly(ctx context.Context, path string) (*DB, error) {
	if path == "" {
		return nil, errors.New("opening store: no path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("opening store %s: %w", path, err)
	}
	k, err := inspect(ctx, path, abs)
	if err != nil {
		return nil, err
	}
	switch k {
	case kindMissing:
		return nil, &NoStoreError{Path: path}
	case kindEmpty:
		return nil, &NoStoreError{Path: path, Empty: true}
	}
	return openReader(ctx, path, uri(abs, readPragmas+readMode(abs)))
}

// readMode is the part of a reader's URI that says how it reaches the
// store at abs (see OpenReadOnly).
func readMode(abs string) string {
	switch {
	case readOnly(abs) == "":
		return "&mode=rw"
	case exists(abs + "-wal"):
		return "&mode=ro"
	}
	return "&mode=ro&immutable=1"
}

// openReader opens the read pool of a store opened for reading, at the
// URI u, and reads its schema version.
func openReader(ctx context.Context, path, u string) (*DB, error) {
	db := &DB{path: path, latest: migrations.Latest()}
	r, err := sqlx.Open("sqlite3", u)
	if err != nil {
		return nil, fmt.Errorf("opening store %s: %w", path, err)
	}
	n := max(2, runtime.GOMAXPROCS(0))
	r.SetMaxOpenConns(n)
	r.SetMaxIdleConns(n)
	db.r = r
	if err := checkPragmas(ctx, r, false, true); err != nil {
		db.Close()
		return nil, classify(path, err)
	}
	if err := db.readVersion(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// readVersion reads the schema version of a store opened for reading, and
// refuses one from a newer hoist.
func (db *DB) readVersion(ctx context.Context) error {
	var tables, v int
	err := db.readTx(ctx, func(tx *sqlx.Tx) error {
		if err := tx.GetContext(ctx, &tables, "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'schema_migrations'"); err != nil || tables == 0 {
			return err
		}
		return tx.GetContext(ctx, &v, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations")
	})
	switch {
	case err != nil:
		return classify(db.path, fmt.Errorf("reading schema version: %w", err))
	case tables == 0:
		// Stamped a moment ago by a writer that has not made the schema yet.
		return &NoStoreError{Path: db.path, Empty: true}
	case v > db.latest:
		return &NewerSchemaError{Path: db.path, Store: v, Binary: db.latest}
	}
	db.version = v
	return nil
}

// checkPragmas verifies that the DSN's pragmas took: a driver that ignored
// them would silently lose foreign keys, the busy timeout or, for a
// reader, the query_only that keeps a read-write connection from writing.
// wal asks for WAL too: a writer sets it, a reader reads in whatever mode
// the store is (immutable=1 reports none).
func checkPragmas(ctx context.Context, db *sqlx.DB, wal, queryOnly bool) error {
	var mode string
	var fk, busy, qo int
	if err := db.GetContext(ctx, &mode, "PRAGMA journal_mode"); err != nil {
		return fmt.Errorf("reading journal_mode: %w", err)
	}
	if err := db.GetContext(ctx, &fk, "PRAGMA foreign_keys"); err != nil {
		return fmt.Errorf("reading foreign_keys: %w", err)
	}
	if err := db.GetContext(ctx, &busy, "PRAGMA busy_timeout"); err != nil {
		return fmt.Errorf("reading busy_timeout: %w", err)
	}
	if err := db.GetContext(ctx, &qo, "PRAGMA query_only"); err != nil {
		return fmt.Errorf("reading query_only: %w", err)
	}
	if (wal && !strings.EqualFold(mode, "wal")) || fk != 1 || busy != int(BusyTimeout/time.Millisecond) || (queryOnly && qo != 1) {
		return fmt.Errorf("connection pragmas not in effect (journal_mode=%s foreign_keys=%d busy_timeout=%d query_only=%d)", mode, fk, busy, qo)
	}
	return nil
}

// migrate claims the store and applies the embedded migrations it lacks,
// each in its own transaction that also records it and sets user_version.
// Two processes opening one new store at once are safe: each migration's
// transaction takes the write lock first and checks again whether it is
// applied.
func (db *DB) migrate(ctx context.Context, all []migrations.Migration) error {
	v, err := db.claim(ctx)
	if err != nil {
		return err
	}
	for _, m := range all[v:] {
		if err := db.applyOne(ctx, m); err != nil {
			return err
		}
	}
	db.version = db.latest
	return nil
}

// claim makes the file hoist's under the write lock, before any migration:
// it checks again that the file is a store (inspect looked without the
// lock), writes the mark and schema_migrations when they are missing (a
// store from a hoist before the mark, or a file stamped a moment ago), and
// sets user_version to the version schema_migrations records. It refuses a
// newer store before writing anything, and writes nothing to a store that
// is marked and in step. It returns the store's schema version.
func (db *DB) claim(ctx context.Context) (int, error) {
	tx, err := db.w.BeginTxx(ctx, nil)
	if err != nil {
		return 0, classify(db.path, err)
	}
	defer tx.Rollback()
	var app int32
	if err := tx.GetContext(ctx, &app, "PRAGMA application_id"); err != nil {
		return 0, classify(db.path, err)
	}
	if uint32(app) != ApplicationID {
		tables, err := userTables(ctx, tx)
		if err != nil {
			return 0, classify(db.path, err)
		}
		ours := app == 0 && len(tables) == 0
		if app == 0 && len(tables) > 0 {
			if ours, err = hoistMigrations(ctx, tx); err != nil {
				return 0, classify(db.path, err)
			}
		}
		if !ours {
			return 0, &NotStoreError{Path: db.path, SQLite: true, ApplicationID: app, Tables: len(tables)}
		}
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY,
		name TEXT NOT NULL,
		applied_unix_ms INTEGER NOT NULL
	)`); err != nil {
		return 0, classify(db.path, fmt.Errorf("creating schema_migrations: %w", err))
	}
	var v, uv int
	if err := tx.GetContext(ctx, &v, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations"); err != nil {
		return 0, classify(db.path, fmt.Errorf("reading schema version: %w", err))
	}
	if v > db.latest {
		return 0, &NewerSchemaError{Path: db.path, Store: v, Binary: db.latest}
	}
	if err := tx.GetContext(ctx, &uv, "PRAGMA user_version"); err != nil {
		return 0, classify(db.path, fmt.Errorf("reading user_version: %w", err))
	}
	if uint32(app) != ApplicationID {
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA application_id = %d", ApplicationID)); err != nil {
			return 0, classify(db.path, fmt.Errorf("marking the store: %w", err))
		}
	}
	if uv != v {
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", v)); err != nil {
			return 0, classify(db.path, fmt.Errorf("setting user_version: %w", err))
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, classify(db.path, fmt.Errorf("committing the mark: %w", err))
	}
	return v, nil
}

func (db *DB) applyOne(ctx context.Context, m migrations.Migration) error {
	tx, err := db.w.BeginTxx(ctx, nil)
	if err != nil {
		return classify(db.path, err)
	}
	defer tx.Rollback()
	var have int
	if err := tx.GetContext(ctx, &have, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations"); err != nil {
		return classify(db.path, fmt.Errorf("reading schema version: %w", err))
	}
	if have > db.latest {
		return &NewerSchemaError{Path: db.path, Store: have, Binary: db.latest}
	}
	if have >= m.Version {
		return nil
	}
	if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
		return classify(db.path, fmt.Errorf("applying migration %s: %w", m.Name, err))
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO schema_migrations (version, name, applied_unix_ms) VALUES (?, ?, ?)",
		m.Version, m.Name, time.Now().UnixMilli()); err != nil {
		return classify(db.path, fmt.Errorf("recording migration %s: %w", m.Name, err))
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", m.Version)); err != nil {
		return classify(db.path, fmt.Errorf("recording migration %s in user_version: %w", m.Name, err))
	}
	if err := tx.Commit(); err != nil {
		return classify(db.path, fmt.Errorf("committing migration %s: %w", m.Name, err))
	}
	return nil
}

// Path returns the path the store was opened with.
func (db *DB) Path() string { return db.path }

// SchemaVersion returns the store's schema version.
func (db *DB) SchemaVersion() int { return db.version }

// Close closes both pools. It is safe to call more than once. A store
// Build was building and that was not published is removed.
func (db *DB) Close() error {
	err := db.closePools()
	db.closeBuild()
	return err
}

func (db *DB) closePools() error {
	var errs []error
	if db.r != nil {
		errs = append(errs, db.r.Close())
		db.r = nil
	}
	if db.w != nil {
		errs = append(errs, db.w.Close())
		db.w = nil
	}
	return errors.Join(errs...)
}

// writeTx runs fn in one write transaction, retrying a few times when
// another process holds the write lock past the busy timeout. A store
// opened for reading refuses it.
func (db *DB) writeTx(ctx context.Context, fn func(*sqlx.Tx) error) error {
	if db.w == nil {
		return &ReadOnlyError{Path: db.path, Reason: "opened for reading"}
	}
	for attempt := 0; ; attempt++ {
		err := db.tryWrite(ctx, fn)
		if err == nil || !isBusy(err) || attempt >= 5 || ctx.Err() != nil {
			if k := known(db.path, err); k != nil {
				return k
			}
			return err
		}
	}
}

func (db *DB) tryWrite(ctx context.Context, fn func(*sqlx.Tx) error) error {
	tx, err := db.w.BeginTxx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}

// readTx runs fn in one read transaction, a consistent snapshot. A damaged
// store, and a read an older schema cannot answer, say so.
func (db *DB) readTx(ctx context.Context, fn func(*sqlx.Tx) error) error {
	err := func() error {
		tx, err := db.r.BeginTxx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if err := fn(tx); err != nil {
			return err
		}
		return tx.Commit()
	}()
	if k := known(db.path, err); k != nil {
		return k
	}
	return db.olderSchema(err)
}

func isBusy(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && (se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked)
}
