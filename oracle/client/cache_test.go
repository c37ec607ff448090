package client_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hoist-mcp/hoist/oracle"
	"github.com/hoist-mcp/hoist/oracle/client"
)

// keyN is a made-up key.
func keyN(n int) string {
	sum := sha256.Sum256([]byte(strconv.Itoa(n)))
	return hex.EncodeToString(sum[:])
}

func entryN(n int, p float64) client.Entry {
	return client.Entry{Key: keyN(n), Model: model, Prompt: "confirm/1", PYes: p, From: oracle.FromLogprobs, Word: "yes",
		Created: time.UnixMilli(1790198400123)}
}

func TestCacheRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "cache")
	c, err := client.OpenCache(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Get(keyN(1)); ok {
		t.Fatal("an empty cache holds an entry")
	}
	want := entryN(1, 0.125)
	if err := c.Put(want); err != nil {
		t.Fatal(err)
	}
	got, ok := c.Get(keyN(1))
	if !ok {
		t.Fatal("the entry put is not there")
	}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for path, mode := range map[string]os.FileMode{
		dir:                             0o700,
		filepath.Join(dir, keyN(1)[:2]): 0o700,
		entryPath(dir, keyN(1)):         0o600,
		filepath.Dir(dir):               0o700, // a parent it made
	} {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != mode {
			t.Errorf("%s: mode %v, want %v", path, st.Mode().Perm(), mode)
		}
	}
	b, _ := os.ReadFile(entryPath(dir, keyN(1)))
	if want := `{"created_unix_ms":1790198400123,"from":"logprobs","hoist_oracle_cache":1,"key":"` + keyN(1) +
		`","model":"system-one-test","p_yes":0.125,"prompt":"confirm/1","word":"yes"}` + "\n"; string(b) != want {
		t.Errorf("entry file:\n%s\nwant\n%s", b, want)
	}
	// Put replaces.
	if err := c.Put(entryN(1, 1)); err != nil {
		t.Fatal(err)
	}
	if e, _ := c.Get(keyN(1)); e.PYes != 1 {
		t.Errorf("after a second Put: p_yes %v", e.PYes)
	}
	// Nothing but the entries and their shard.
	if names := dirNames(t, dir); len(names) != 1 || len(dirNames(t, filepath.Join(dir, names[0]))) != 1 {
		t.Errorf("the cache holds %v, want one shard with one entry (no temporary files left)", names)
	}
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

func TestCacheRefuses(t *testing.T) {
	c, err := client.OpenCache(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		e    client.Entry
		want string
	}{
		{client.Entry{Key: "../../etc/passwd", PYes: 0.5}, `caching an answer: "../../etc/passwd" is not a key`},
		{client.Entry{Key: strings.ToUpper(keyN(1)), PYes: 0.5}, "is not a key"},
		{client.Entry{Key: keyN(1), PYes: 1.01}, "caching an answer: p_yes 1.01 is not from 0 to 1"},
		{client.Entry{Key: keyN(1), PYes: -0.0001}, "is not from 0 to 1"},
	} {
		if err := c.Put(tc.e); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Put(%+v): %v, want %q", tc.e, err, tc.want)
		}
	}
	if _, ok := c.Get("../x"); ok {
		t.Error("Get of a path")
	}
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o600)
	if _, err := client.OpenCache(file, nil); err == nil {
		t.Error("OpenCache of a file: no error")
	}
	if _, err := client.OpenCache("", nil); err == nil {
		t.Error(`OpenCache(""): no error`)
	}
	var none *client.Cache
	if _, ok := none.Get(keyN(1)); ok || none.Put(entryN(1, 0.5)) != nil || none.Dir() != "" {
		t.Error("a nil cache is not empty and inert")
	}
	if n, err := none.Prune(time.Now()); n != 0 || err != nil {
		t.Errorf("a nil cache pruned %d, %v", n, err)
	}
}

func TestPrune(t *testing.T) {
	dir := t.TempDir()
	c, err := client.OpenCache(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	cutoff := time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC)
	old, recent := cutoff.Add(-time.Hour), cutoff.Add(time.Hour)
	touch := func(path string, at time.Time) {
		t.Helper()
		if err := os.Chtimes(path, at, at); err != nil {
			t.Fatal(err)
		}
	}
	for n := range 6 {
		if err := c.Put(entryN(n, 0.5)); err != nil {
			t.Fatal(err)
		}
		at := recent
		if n%2 == 0 {
			at = old
		}
		touch(entryPath(dir, keyN(n)), at)
	}
	shard := filepath.Join(dir, keyN(0)[:2])
	// A write that never finished, long ago, and one in progress now.
	staleTmp := filepath.Join(shard, "."+keyN(0)+".json.tmp-123456")
	liveTmp := filepath.Join(shard, "."+keyN(7)+".json.tmp-654321")
	// Files that are not the cache's stay, however old.
	foreign := []string{filepath.Join(dir, "README"), filepath.Join(shard, "notes.txt"), filepath.Join(dir, "zz", "x.json")}
	os.MkdirAll(filepath.Join(dir, "zz"), 0o700)
	for _, p := range append([]string{staleTmp, liveTmp}, foreign...) {
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		touch(p, old)
	}
	touch(liveTmp, recent)

	n, err := c.Prune(cutoff)
	if err != nil || n != 4 {
		t.Errorf("Prune = %d, %v; want 4 (3 old entries and a stale temporary file)", n, err)
	}
	for k := range 6 {
		_, ok := c.Get(keyN(k))
		if ok != (k%2 == 1) {
			t.Errorf("entry %d: there %v after the prune", k, ok)
		}
	}
	for _, p := range append([]string{liveTmp, shard}, foreign...) {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s: %v, want it kept", p, err)
		}
	}
	if _, err := os.Stat(staleTmp); !os.IsNotExist(err) {
		t.Errorf("the stale temporary file: %v, want it gone", err)
	}
	if n, err := c.Prune(cutoff); n != 0 || err != nil {
		t.Errorf("a second prune: %d, %v", n, err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Prune(cutoff); n != 0 || err != nil {
		t.Errorf("the prune of a removed cache: %d, %v", n, err)
	}
}

// TestCacheConcurrent has goroutines of one process, with Cache values of
// their own, write the same keys while others read them: every read is a
// whole entry or a miss.
func TestCacheConcurrent(t *testing.T) {
	dir := t.TempDir()
	var wg sync.WaitGroup
	for w := range 4 {
		c, err := client.OpenCache(dir, func(msg string) { t.Errorf("warning: %s", msg) })
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			for n := range 50 {
				if w%2 == 0 {
					if err := c.Put(entryN(n, float64(w)/4)); err != nil {
						t.Error(err)
					}
				} else if e, ok := c.Get(keyN(n)); ok && e.Key != keyN(n) {
					t.Errorf("entry %d read as %+v", n, e)
				}
			}
		})
	}
	wg.Wait()
}

// TestCacheProcesses has two processes (this test binary, run again as
// helpers) write the same entries at once while this one reads them.
func TestCacheProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := t.TempDir()
	var cmds []*exec.Cmd
	for i := range 2 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCacheHelperProcess$")
		cmd.Env = append(os.Environ(), "HOIST_ORACLE_CACHE_HELPER="+dir, "HOIST_ORACLE_CACHE_HELPER_P="+strconv.Itoa(i))
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	c, err := client.OpenCache(dir, func(msg string) { t.Errorf("warning: %s", msg) })
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, len(cmds))
	for _, cmd := range cmds {
		go func() { done <- cmd.Wait() }()
	}
	for finished := 0; finished < len(cmds); {
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("helper: %v", err)
			}
			finished++
		default:
			for n := range helperEntries {
				if e, ok := c.Get(keyN(n)); ok && (e.PYes != 0 && e.PYes != 1) {
					t.Fatalf("entry %d read as %+v", n, e)
				}
			}
		}
	}
	for n := range helperEntries {
		if _, ok := c.Get(keyN(n)); !ok {
			t.Errorf("entry %d missing", n)
		}
	}
}

const helperEntries = 100

// TestCacheHelperProcess is TestCacheProcesses's writer, when run as one.
func TestCacheHelperProcess(t *testing.T) {
	dir := os.Getenv("HOIST_ORACLE_CACHE_HELPER")
	if dir == "" {
		t.Skip("a helper of TestCacheProcesses")
	}
	p, _ := strconv.Atoi(os.Getenv("HOIST_ORACLE_CACHE_HELPER_P"))
	c, err := client.OpenCache(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	for n := range helperEntries {
		if err := c.Put(entryN(n, float64(p))); err != nil {
			t.Fatal(fmt.Errorf("process %d: %w", p, err))
		}
	}
}
