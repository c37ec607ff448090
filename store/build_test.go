package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hoist-mcp/hoist/episode"
)

// putSample writes one episode, id, with its log file, into db.
func putSample(t *testing.T, db *DB, id string) {
	t.Helper()
	file := LogFile{Path: "/logs/" + id + ".jsonl", Dir: "/logs", Size: 100, SHA256: id, Status: StatusIngested, Session: id, HostSession: "host-1"}
	ep := sample(id, time.Date(2026, 3, 8, 20, 47, 51, 0, time.UTC))
	if wrote, err := db.Put(context.Background(), Unit{Episodes: []*episode.Episode{ep}, Files: []LogFile{file}}); err != nil || !wrote {
		t.Fatalf("Put(%s) = %v, %v", id, wrote, err)
	}
}

// dirNames lists the names in dir.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// A new store is built beside its path, and is at the path only whole:
// while it is built a reader finds no store there, once published it is a
// store as Open makes them (WAL, the mark, the schema), with what was
// written, and nothing is left beside it.
func TestBuildAppearsWhole(t *testing.T) {
	for _, empty := range []bool{false, true} {
		t.Run(map[bool]string{false: "missing", true: "empty file"}[empty], func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			path := filepath.Join(dir, "hoist.db")
			if empty {
				if err := writeFile(path, ""); err != nil {
					t.Fatal(err)
				}
			}
			db, err := Build(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			putSample(t, db, "s1")
			putSample(t, db, "s2")
			if ss, err := db.Sessions(ctx, episode.Filter{}); err != nil || len(ss) != 2 {
				t.Fatalf("the build reads back %d sessions, %v", len(ss), err)
			}
			var ns *NoStoreError
			if r, err := OpenReadOnly(ctx, path); !errors.As(err, &ns) {
				if r != nil {
					r.Close()
				}
				t.Fatalf("a reader during the build: %v, want no store", err)
			}
			if err := db.Publish(ctx); err != nil {
				t.Fatal(err)
			}
			// db now works on the store at its path.
			putSample(t, db, "s3")
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			if got := dirNames(t, dir); strings.Join(got, " ") != "hoist.db" {
				t.Errorf("beside the store: %v", got)
			}
			r, err := OpenReadOnly(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			var mode string
			var app, page int32
			r.r.GetContext(ctx, &mode, "PRAGMA journal_mode")
			r.r.GetContext(ctx, &app, "PRAGMA application_id")
			r.r.GetContext(ctx, &page, "PRAGMA page_size")
			if mode != "wal" || uint32(app) != ApplicationID || page != pageSize {
				t.Errorf("published store: journal_mode %s, application_id %#x, page_size %d", mode, app, page)
			}
			if ss, err := r.Sessions(ctx, episode.Filter{}); err != nil || len(ss) != 3 {
				t.Errorf("published store holds %d sessions, %v; want 3", len(ss), err)
			}
		})
	}
}

// A build given up (bad input, an interrupt) leaves no store and no file,
// and an empty file that was there stays as it was.
func TestBuildGivenUpLeavesNothing(t *testing.T) {
	for _, empty := range []bool{false, true} {
		ctx := context.Background()
		dir := t.TempDir()
		path := filepath.Join(dir, "hoist.db")
		want := ""
		if empty {
			writeFile(path, "")
			want = "hoist.db"
		}
		db, err := Build(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		putSample(t, db, "s1")
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(dirNames(t, dir), " "); got != want {
			t.Errorf("empty=%v: after a build given up: %q, want %q", empty, got, want)
		}
	}
}

// What a build killed mid-way left (its file, half written, and its
// journal) is started over by the next build of the store.
func TestBuildStartsOverWhatACrashLeft(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "hoist.db")
	tmp := filepath.Join(dir, ".hoist.db.build")
	writeFile(tmp, "SQLite format 3\x00 and half a store")
	writeFile(tmp+"-journal", "a journal")
	db, err := Build(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	putSample(t, db, "s1")
	if err := db.Publish(ctx); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if got := strings.Join(dirNames(t, dir), " "); got != "hoist.db" {
		t.Errorf("after the build: %s", got)
	}
}

// A second build of the store waits for the first, then adds to the store
// the first published: nothing the first wrote is lost to a rename.
func TestSecondBuildWaitsForTheFirst(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "hoist.db")
	first, err := Build(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	putSample(t, first, "s1")
	type opened struct {
		db  *DB
		err error
	}
	second := make(chan opened, 1)
	go func() {
		db, err := Build(ctx, path)
		second <- opened{db, err}
	}()
	if err := first.Publish(ctx); err != nil {
		t.Fatal(err)
	}
	first.Close()
	o := <-second
	if o.err != nil {
		t.Fatal(o.err)
	}
	defer o.db.Close()
	if o.db.build != nil {
		t.Error("the second build built a store of its own, with one at the path")
	}
	putSample(t, o.db, "s2")
	if err := o.db.Publish(ctx); err != nil {
		t.Fatal(err)
	}
	if ss, err := o.db.Sessions(ctx, episode.Filter{}); err != nil || len(ss) != 2 {
		t.Errorf("the store holds %d sessions, %v; want both builds'", len(ss), err)
	}
	o.db.Close()
	if got := strings.Join(dirNames(t, dir), " "); got != "hoist.db" {
		t.Errorf("beside the store: %s", got)
	}
}

// Into a store that holds something, Build is Open: it writes in place,
// through the WAL, and makes no file to build in.
func TestBuildOfAnExistingStoreWritesInPlace(t *testing.T) {
	ctx := context.Background()
	db, path := openTemp(t)
	putSample(t, db, "s1")
	db.Close()
	b, err := Build(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.build != nil {
		t.Fatal("Build of an existing store builds a new one")
	}
	putSample(t, b, "s2")
	r, err := OpenReadOnly(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if ss, err := r.Sessions(ctx, episode.Filter{}); err != nil || len(ss) != 2 {
		t.Errorf("a reader before Publish sees %d sessions, %v; want 2", len(ss), err)
	}
	if err := b.Publish(ctx); err != nil {
		t.Fatal(err)
	}
	for _, n := range dirNames(t, filepath.Dir(path)) {
		if strings.Contains(n, ".build") {
			t.Errorf("a build file beside an existing store: %s", n)
		}
	}
}
