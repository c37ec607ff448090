// Package store is hoist's episode store: one SQLite file, reached through
// mattn/go-sqlite3 and sqlx, that every command reads episodes from
// (DESIGN.md, "Store"). It is the only package that speaks SQL.
//
// Open checks the per-connection pragmas the DSN sets (WAL, a busy timeout,
// foreign keys), applies the embedded migrations each in its own
// transaction, and refuses a store written by a newer hoist. A DB holds one
// writer connection, whose transactions take the write lock at BEGIN
// (_txlock=immediate) so that two processes writing at once queue on the
// busy timeout instead of failing, and a pool of read-only connections.
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

// pragmas are set on every connection by the DSN (STYLE.md, "SQLite").
const pragmas = "_journal_mode=WAL&_busy_timeout=5000&_foreign_keys=on&_synchronous=NORMAL"

// DB is an open episode store. It is safe for concurrent use; Close once.
type DB struct {
	path    string
	w       *sqlx.DB // exactly one connection: SQLite has one writer
	r       *sqlx.DB // read-only pool
	version int
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

// dsn returns the URI for path: a file: URI, so that mode=ro works, with the
// characters URI parsing would take escaped.
func dsn(path string, extra string) string {
	r := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23")
	return "file:" + r.Replace(path) + "?" + pragmas + extra
}

// Open opens the store at path, creating it (and its directory) when
// missing, and brings its schema up to date. Several processes may open one
// new store at once: switching a new file to WAL can report it busy without
// waiting, so Open tries again for a while.
func Open(ctx context.Context, path string) (*DB, error) {
	var err error
	for attempt := 1; ; attempt++ {
		var db *DB
		db, err = open(ctx, path)
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

func open(ctx context.Context, path string) (*DB, error) {
	if path == "" {
		return nil, errors.New("opening store: no path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("opening store %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("opening store %s: %w", path, err)
	}
	// The store holds what the logs hold, so it is private as they are
	// (0600); SQLite gives its -wal and -shm files the same mode.
	if f, err := os.OpenFile(abs, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600); err == nil {
		f.Close()
	}
	db := &DB{path: path}
	w, err := sqlx.Open("sqlite3", dsn(abs, "&_txlock=immediate"))
	if err != nil {
		return nil, fmt.Errorf("opening store %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	db.w = w
	if err := checkPragmas(ctx, w); err != nil {
		db.Close()
		return nil, fmt.Errorf("opening store %s: %w", path, err)
	}
	if err := db.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	r, err := sqlx.Open("sqlite3", dsn(abs, "&mode=ro&_query_only=1"))
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("opening store %s: %w", path, err)
	}
	n := max(2, runtime.GOMAXPROCS(0))
	r.SetMaxOpenConns(n)
	r.SetMaxIdleConns(n)
	db.r = r
	if err := checkPragmas(ctx, r); err != nil {
		db.Close()
		return nil, fmt.Errorf("opening store %s: %w", path, err)
	}
	return db, nil
}

// checkPragmas verifies that the DSN's pragmas took: a driver that ignored
// them would silently lose foreign keys or the busy timeout.
func checkPragmas(ctx context.Context, db *sqlx.DB) error {
	var mode string
	var fk, busy int
	if err := db.GetContext(ctx, &mode, "PRAGMA journal_mode"); err != nil {
		if isNotADatabase(err) {
			return errors.New("not a hoist store (not an SQLite database)")
		}
		return fmt.Errorf("reading journal_mode: %w", err)
	}
	if err := db.GetContext(ctx, &fk, "PRAGMA foreign_keys"); err != nil {
		return fmt.Errorf("reading foreign_keys: %w", err)
	}
	if err := db.GetContext(ctx, &busy, "PRAGMA busy_timeout"); err != nil {
		return fmt.Errorf("reading busy_timeout: %w", err)
	}
	if !strings.EqualFold(mode, "wal") || fk != 1 || busy != int(BusyTimeout/time.Millisecond) {
		return fmt.Errorf("connection pragmas not in effect (journal_mode=%s foreign_keys=%d busy_timeout=%d)", mode, fk, busy)
	}
	return nil
}

func isNotADatabase(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && se.Code == sqlite3.ErrNotADB
}

// migrate applies the embedded migrations the store lacks, each in its own
// transaction that also records it, and refuses a newer store. Two processes
// opening one new store at once are safe: each migration's transaction
// takes the write lock first and checks again whether it is applied.
func (db *DB) migrate(ctx context.Context) error {
	all, err := migrations.All()
	if err != nil {
		return fmt.Errorf("reading migrations: %w", err)
	}
	latest := len(all)
	if _, err := db.w.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY,
		name TEXT NOT NULL,
		applied_unix_ms INTEGER NOT NULL
	)`); err != nil {
		if isNotADatabase(err) {
			return fmt.Errorf("opening store %s: not a hoist store (not an SQLite database)", db.path)
		}
		return fmt.Errorf("opening store %s: creating schema_migrations: %w", db.path, err)
	}
	for _, m := range all {
		applied, err := db.applyOne(ctx, m, latest)
		if err != nil {
			return err
		}
		if applied {
			db.version = m.Version
		}
	}
	var v int
	if err := db.w.GetContext(ctx, &v, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations"); err != nil {
		return fmt.Errorf("opening store %s: reading schema version: %w", db.path, err)
	}
	if v > latest {
		return &NewerSchemaError{Path: db.path, Store: v, Binary: latest}
	}
	db.version = v
	return nil
}

func (db *DB) applyOne(ctx context.Context, m migrations.Migration, latest int) (bool, error) {
	tx, err := db.w.BeginTxx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("opening store %s: %w", db.path, err)
	}
	defer tx.Rollback()
	var have int
	if err := tx.GetContext(ctx, &have, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations"); err != nil {
		return false, fmt.Errorf("opening store %s: reading schema version: %w", db.path, err)
	}
	if have > latest {
		return false, &NewerSchemaError{Path: db.path, Store: have, Binary: latest}
	}
	if have >= m.Version {
		return true, nil
	}
	if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
		return false, fmt.Errorf("opening store %s: applying migration %s: %w", db.path, m.Name, err)
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO schema_migrations (version, name, applied_unix_ms) VALUES (?, ?, ?)",
		m.Version, m.Name, time.Now().UnixMilli()); err != nil {
		return false, fmt.Errorf("opening store %s: recording migration %s: %w", db.path, m.Name, err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("opening store %s: committing migration %s: %w", db.path, m.Name, err)
	}
	return true, nil
}

// Path returns the path the store was opened with.
func (db *DB) Path() string { return db.path }

// SchemaVersion returns the store's schema version.
func (db *DB) SchemaVersion() int { return db.version }

// Close closes both pools. It is safe to call more than once.
func (db *DB) Close() error {
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
// another process holds the write lock past the busy timeout.
func (db *DB) writeTx(ctx context.Context, fn func(*sqlx.Tx) error) error {
	for attempt := 0; ; attempt++ {
		err := db.tryWrite(ctx, fn)
		if err == nil || !isBusy(err) || attempt >= 5 || ctx.Err() != nil {
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

// readTx runs fn in one read transaction, a consistent snapshot.
func (db *DB) readTx(ctx context.Context, fn func(*sqlx.Tx) error) error {
	tx, err := db.r.BeginTxx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}

func isBusy(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && (se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked)
}
