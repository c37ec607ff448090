package cli_test

// How hoist opens its store, seen from the command line: it never writes
// into a database that is not hoist's, commands that only read never
// create, migrate or mark a store, a read-only store still reads, and a
// damaged one says how to rebuild it (the issue filed after a new user's
// trial).

import (
	"bytes"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hoist-mcp/hoist/internal/testbin"
	"github.com/hoist-mcp/hoist/migrations"
)

// hoistApplicationID is the mark hoist's stores carry in their SQLite
// header, "hois" (store.ApplicationID).
const hoistApplicationID = 0x686f6973

// fileState is what a test compares to say a command left a file alone:
// its bytes, and the SQLite companion files beside it.
type fileState struct {
	sum      string
	sidecars []string
}

func stateOf(t *testing.T, path string) fileState {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256(b)
	return fileState{hex.EncodeToString(h[:]), sidecars(path)}
}

// sidecars lists the -wal, -shm and -journal files beside path.
func sidecars(path string) []string {
	var out []string
	for _, s := range []string{"-wal", "-shm", "-journal"} {
		if _, err := os.Lstat(path + s); err == nil {
			out = append(out, filepath.Base(path+s))
		}
	}
	return out
}

// checkUntouched fails the test when path changed since before, or when
// a companion file appeared beside it.
func checkUntouched(t *testing.T, path string, before fileState, what string) {
	t.Helper()
	after := stateOf(t, path)
	if after.sum != before.sum {
		t.Errorf("%s changed the bytes of %s", what, filepath.Base(path))
	}
	if fmt.Sprint(after.sidecars) != fmt.Sprint(before.sidecars) {
		t.Errorf("%s left %v beside %s (before: %v)", what, after.sidecars, filepath.Base(path), before.sidecars)
	}
}

// sqliteExec runs statements on the SQLite file at path as another
// program would, outside hoist.
func sqliteExec(t *testing.T, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// pragma reads one integer pragma of a closed SQLite file without
// touching it.
func pragma(t *testing.T, path, name string) int64 {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro&immutable=1")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v int64
	if err := db.QueryRow("PRAGMA " + name).Scan(&v); err != nil {
		t.Fatalf("PRAGMA %s of %s: %v", name, path, err)
	}
	return v
}

// makeOldStore writes a store the way hoist did before stores carried a
// mark: WAL, its schema_migrations table and the first n migrations, no
// application_id and no user_version.
func makeOldStore(t *testing.T, path string, n int) {
	t.Helper()
	all, err := migrations.All()
	if err != nil {
		t.Fatal(err)
	}
	stmts := []string{"PRAGMA journal_mode=WAL", `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY,
		name TEXT NOT NULL,
		applied_unix_ms INTEGER NOT NULL
	)`}
	for _, m := range all[:n] {
		stmts = append(stmts, m.SQL, fmt.Sprintf("INSERT INTO schema_migrations VALUES (%d, '%s', 0)", m.Version, m.Name))
	}
	sqliteExec(t, path, stmts...)
	if got := pragma(t, path, "application_id"); got != 0 {
		t.Fatalf("an old store has application_id %d", got)
	}
}

// failing is the exit code of a command that fails: 1, but 2 for drift,
// whose 1 means drift found.
func failing(args []string) int {
	if args[0] == "drift" {
		return 2
	}
	return 1
}

// readCommands are the commands that only read a store given --store
// alone, each with the flags it needs; out is a directory for their output.
func readCommands(store, out string) [][]string {
	flow := filepath.Join(testbin.Root(), "testdata", "flows", "tau2-retail.flow.json")
	return [][]string{
		{"sessions", "--store", store},
		{"sessions", "show", "some-session", "--store", store},
		{"export", "--store", store, "--format", "jsonl", "--out", filepath.Join(out, "export")},
		{"learn", "--store", store, "--domain", "retail", "--out", filepath.Join(out, "learned.flow.json")},
		{"audit", "--store", store, "--flow", flow},
		{"drift", "--store", store, "--flow", flow},
		{"promote", "--store", store, "--flow", flow, "--out", filepath.Join(out, "promoted.flow.json")},
		{"evaluate", "--store", store},
	}
}

func TestForeignDatabaseLeftAlone(t *testing.T) {
	logs := filepath.Join(t.TempDir(), "logs")
	copyTestdata(t, "tau2/logs", logs)
	for _, tc := range []struct {
		name string
		make func(t *testing.T, path string)
		want string
	}{
		{"a table another program made", func(t *testing.T, p string) {
			sqliteExec(t, p, "CREATE TABLE t(x)")
		}, "not a hoist store: it is an SQLite database made by another program (application_id 0, 1 table); pass another --store"},
		{"a WAL database with its own application_id", func(t *testing.T, p string) {
			sqliteExec(t, p, "PRAGMA journal_mode=WAL", "PRAGMA application_id=1196444487", "CREATE TABLE a(x)", "CREATE TABLE b(y)", "INSERT INTO a VALUES (1)")
		}, "not a hoist store: it is an SQLite database made by another program (application_id 1196444487, 2 tables); pass another --store"},
		{"an SQLite database with no tables", func(t *testing.T, p string) {
			sqliteExec(t, p, "PRAGMA user_version=7")
		}, "not a hoist store: it is an SQLite database made by another program (application_id 0, 0 tables); pass another --store"},
		{"a text file", func(t *testing.T, p string) {
			if err := os.WriteFile(p, bytes.Repeat([]byte("not a database\n"), 100), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "not a hoist store: it is not an SQLite database; pass another --store"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "other.db")
			tc.make(t, path)
			before := stateOf(t, path)
			cmds := append(readCommands(path, dir), []string{"ingest", "--sessions", logs, "--store", path})
			for _, args := range cmds {
				r := run(t, nil, args...)
				what := "hoist " + strings.Join(args[:2], " ")
				if r.code != failing(args) || !strings.Contains(r.stderr, path+": "+tc.want) {
					t.Errorf("%s: exit %d, want %d and %q\n%s", what, r.code, failing(args), path+": "+tc.want, r.stderr)
				}
				checkUntouched(t, path, before, what)
			}
		})
	}

	t.Run("a foreign hoist.db beside the logs", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "logs")
		copyTestdata(t, "tau2/logs", dir)
		path := filepath.Join(dir, "hoist.db")
		sqliteExec(t, path, "CREATE TABLE t(x)")
		before := stateOf(t, path)
		for _, cmd := range []string{"ingest", "sessions", "learn"} {
			r := run(t, nil, cmd, "--sessions", dir)
			if r.code != 1 || !strings.Contains(r.stderr, path+": not a hoist store: it is an SQLite database made by another program (application_id 0, 1 table)") {
				t.Errorf("hoist %s --sessions: exit %d\n%s", cmd, r.code, r.stderr)
			}
			checkUntouched(t, path, before, "hoist "+cmd+" --sessions")
		}
	})
}

func TestEmptyOrMissingFileBecomesAStore(t *testing.T) {
	logs := filepath.Join(t.TempDir(), "logs")
	copyTestdata(t, "tau2/logs", logs)
	dir := t.TempDir()

	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	before := stateOf(t, empty)
	if r := run(t, nil, "sessions", "--store", empty); r.code != 1 || !strings.Contains(r.stderr, "no store at "+empty) {
		t.Errorf("sessions of an empty file: exit %d\n%s", r.code, r.stderr)
	}
	checkUntouched(t, empty, before, "sessions of an empty file")

	missing := filepath.Join(dir, "new.db") // a missing directory is refused (TestMistypedStorePathRefused)
	for _, path := range []string{empty, missing} {
		mustRun(t, "ingest", "-q", "--sessions", logs, "--store", path)
		if got := pragma(t, path, "application_id"); got != hoistApplicationID {
			t.Errorf("%s: application_id %#x, want %#x", path, got, hoistApplicationID)
		}
		if got := pragma(t, path, "user_version"); got != int64(migrations.Latest()) {
			t.Errorf("%s: user_version %d, want the schema version %d", path, got, migrations.Latest())
		}
		if got := sessions(t, "--store", path); len(got) != 5 {
			t.Errorf("%s: %d sessions, want 5", path, len(got))
		}
	}
}

func TestStoreFromAnOlderHoistOpens(t *testing.T) {
	logs := filepath.Join(t.TempDir(), "logs")
	copyTestdata(t, "tau2/logs", logs)
	path := filepath.Join(t.TempDir(), "old.db")
	makeOldStore(t, path, migrations.Latest())
	before := stateOf(t, path)

	// Reading it reads it: no mark is added by a command that only reads.
	if got := sessions(t, "--store", path); len(got) != 0 {
		t.Errorf("sessions of an empty old store: %v", got)
	}
	checkUntouched(t, path, before, "sessions --store")

	// The next command that writes marks it, and keeps it working.
	mustRun(t, "ingest", "-q", "--sessions", logs, "--store", path)
	if got := pragma(t, path, "application_id"); got != hoistApplicationID {
		t.Errorf("application_id %#x after ingest, want %#x", got, hoistApplicationID)
	}
	if got := pragma(t, path, "user_version"); got != int64(migrations.Latest()) {
		t.Errorf("user_version %d after ingest, want %d", got, migrations.Latest())
	}
	if got := sessions(t, "--store", path); len(got) != 5 {
		t.Errorf("%d sessions after ingest, want 5", len(got))
	}
}

func TestReadingCommandsNeverCreateOrMigrate(t *testing.T) {
	t.Run("missing store", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "no-such-dir", "typo.db")
		for _, args := range readCommands(path, dir) {
			r := run(t, nil, args...)
			want := "no store at " + path + ": ingest logs into it first (hoist ingest --sessions DIR --store " + path + ")"
			if r.code != failing(args) || !strings.Contains(r.stderr, want) {
				t.Errorf("hoist %s: exit %d, want %d and %q\n%s", strings.Join(args[:2], " "), r.code, failing(args), want, r.stderr)
			}
		}
		if _, err := os.Stat(filepath.Dir(path)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("reading a missing store made its directory: %v", err)
		}
	})

	t.Run("older schema", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "v1.db")
		makeOldStore(t, path, 1)
		before := stateOf(t, path)
		want := "run `hoist ingest --store " + path + "` to upgrade it"
		for _, args := range readCommands(path, dir) {
			r := run(t, nil, args...)
			if r.code != failing(args) || !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "schema version 1") {
				t.Errorf("hoist %s: exit %d, want %d and %q\n%s", strings.Join(args[:2], " "), r.code, failing(args), want, r.stderr)
			}
			checkUntouched(t, path, before, "hoist "+strings.Join(args[:2], " "))
		}
		r := mustRun(t, "ingest", "--store", path)
		if !strings.Contains(r.stderr, fmt.Sprintf("schema version %d", migrations.Latest())) {
			t.Errorf("ingest --store said:\n%s", r.stderr)
		}
		if got := pragma(t, path, "user_version"); got != int64(migrations.Latest()) {
			t.Errorf("user_version %d after the upgrade, want %d", got, migrations.Latest())
		}
		if got := pragma(t, path, "application_id"); got != hoistApplicationID {
			t.Errorf("application_id %#x after the upgrade", got)
		}
		if got := sessions(t, "--store", path); len(got) != 0 {
			t.Errorf("sessions after the upgrade: %v", got)
		}
	})

	t.Run("upgrade of a missing store", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "typo.db")
		if r := run(t, nil, "ingest", "--store", path); r.code != 1 || !strings.Contains(r.stderr, "no store at "+path) {
			t.Errorf("ingest --store of a missing store: exit %d\n%s", r.code, r.stderr)
		}
		if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("upgrading a missing store made it: %v", err)
		}
	})
}

func TestDamagedStoreSaysHowToRebuild(t *testing.T) {
	logs := filepath.Join(t.TempDir(), "logs")
	copyTestdata(t, "tau2/logs", logs)
	good := filepath.Join(t.TempDir(), "good.db")
	mustRun(t, "ingest", "-q", "--sessions", logs, "--store", good)
	store, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		bytes []byte
	}{
		{"an SQLite header then garbage", append([]byte("SQLite format 3\x00"), bytes.Repeat([]byte("garbage "), 1000)...)},
		{"a store cut in half", store[:len(store)/2]},
		{"a store cut inside its header", store[:50]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "hoist.db")
			if err := os.WriteFile(path, tc.bytes, 0o600); err != nil {
				t.Fatal(err)
			}
			before := stateOf(t, path)
			for _, args := range [][]string{
				{"sessions", "--store", path},
				{"export", "--store", path, "--format", "jsonl", "--out", filepath.Join(t.TempDir(), "x")},
				{"ingest", "--sessions", logs, "--store", path},
			} {
				r := run(t, nil, args...)
				for _, want := range []string{
					"store " + path + " is damaged (",
					"); it holds nothing the logs don't: move it away and run `hoist ingest --sessions DIR --store " + path + "` to rebuild it",
				} {
					if r.code != 1 || !strings.Contains(r.stderr, want) {
						t.Errorf("hoist %s: exit %d, want 1 and %q\n%s", args[0], r.code, want, r.stderr)
					}
				}
				checkUntouched(t, path, before, "hoist "+args[0])
			}
		})
	}
}

// unprivileged returns the credentials to run hoist with so that file
// modes bind it: none when the tests are not root, nobody's when they are
// (root ignores file modes, and CI runs as root). It skips the test when
// neither can be had.
func unprivileged(t *testing.T) *syscall.Credential {
	t.Helper()
	if os.Geteuid() != 0 {
		return nil
	}
	cred := &syscall.Credential{Uid: 65534, Gid: 65534}
	cmd := exec.Command("true")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if err := cmd.Run(); err != nil {
		t.Skipf("running as root and cannot run a process as nobody (%v): file modes do not bind root", err)
	}
	return cred
}

// asUser runs the hoist binary bin with the credentials cred (nil: the
// test's own).
func asUser(t *testing.T, bin string, cred *syscall.Credential, args ...string) result {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = testbin.Env()
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{code, out.String(), errb.String()}
}

func TestReadOnlyStore(t *testing.T) {
	cred := unprivileged(t)
	// A tree the unprivileged user owns, as their own logs and store would
	// be: the binary, the logs, and a store made by ingesting them.
	base, err := os.MkdirTemp("", "hoist-readonly-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
			if d != nil && d.IsDir() {
				os.Chmod(p, 0o755)
			}
			return nil
		})
		os.RemoveAll(base)
	})
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(base, "hoist")
	b, err := os.ReadFile(testbin.Build(t, "hoist"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	logs := filepath.Join(base, "logs")
	copyTestdata(t, "tau2/logs", logs)
	own := func(t *testing.T) {
		if cred == nil {
			return
		}
		err := filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, int(cred.Uid), int(cred.Gid))
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	own(t)
	hoist := func(args ...string) result { return asUser(t, bin, cred, args...) }
	newStore := func(t *testing.T, name string) (dir, path string) {
		dir = filepath.Join(base, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		own(t)
		path = filepath.Join(dir, "hoist.db")
		if r := hoist("ingest", "-q", "--sessions", logs, "--store", path); r.code != 0 {
			t.Fatalf("ingest: exit %d\n%s", r.code, r.stderr)
		}
		return dir, path
	}
	reads := func(t *testing.T, path string) {
		t.Helper()
		before := stateOf(t, path)
		out := filepath.Join(base, "out-"+filepath.Base(filepath.Dir(path)))
		for _, args := range [][]string{
			{"sessions", "--json", "--store", path},
			{"export", "--store", path, "--format", "jsonl", "--out", out},
			{"learn", "--store", path, "--domain", "retail", "--out", out + ".flow.json"},
			{"audit", "--store", path, "--flow", filepath.Join(testbin.Root(), "testdata", "flows", "tau2-retail.flow.json")},
		} {
			r := hoist(args...)
			if r.code != 0 {
				t.Errorf("hoist %s of a read-only store: exit %d\n%s", args[0], r.code, r.stderr)
			}
			if args[0] == "sessions" && strings.Count(r.stdout, `"id"`) != 5 {
				t.Errorf("sessions of a read-only store:\n%s", r.stdout)
			}
			checkUntouched(t, path, before, "hoist "+args[0])
		}
		r := hoist("ingest", "--sessions", logs, "--store", path)
		if r.code != 1 || !strings.Contains(r.stderr, "store "+path+" is read-only (") {
			t.Errorf("ingest into a read-only store: exit %d\n%s", r.code, r.stderr)
		}
		checkUntouched(t, path, before, "hoist ingest")
	}

	t.Run("read-only file", func(t *testing.T) {
		_, path := newStore(t, "file")
		if err := os.Chmod(path, 0o444); err != nil {
			t.Fatal(err)
		}
		reads(t, path)
	})
	t.Run("read-only directory", func(t *testing.T) {
		dir, path := newStore(t, "dir")
		if err := os.Chmod(dir, 0o555); err != nil {
			t.Fatal(err)
		}
		reads(t, path)
	})
	t.Run("unreadable file", func(t *testing.T) {
		_, path := newStore(t, "unreadable")
		if err := os.Chmod(path, 0o200); err != nil {
			t.Fatal(err)
		}
		r := hoist("sessions", "--store", path)
		if r.code != 1 || !strings.Contains(r.stderr, path) || !strings.Contains(r.stderr, "permission denied") || strings.Contains(r.stderr, "no such file") {
			t.Errorf("sessions of an unreadable store: exit %d\n%s", r.code, r.stderr)
		}
	})
	t.Run("new store in a read-only directory", func(t *testing.T) {
		dir := filepath.Join(base, "rodir")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		own(t)
		if err := os.Chmod(dir, 0o555); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "new.db")
		r := hoist("ingest", "-q", "--sessions", logs, "--store", path)
		if r.code != 1 || !strings.Contains(r.stderr, path) || !strings.Contains(r.stderr, "permission denied") || strings.Contains(r.stderr, "no such file") {
			t.Errorf("ingest into a new store in a read-only directory: exit %d\n%s", r.code, r.stderr)
		}
		if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: %v", path, err)
		}
	})
	t.Run("directory that cannot be searched", func(t *testing.T) {
		dir, path := newStore(t, "unsearchable")
		if err := os.Chmod(dir, 0o600); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"sessions", "--store", path}, {"ingest", "-q", "--sessions", logs, "--store", path}} {
			r := hoist(args...)
			if r.code != 1 || !strings.Contains(r.stderr, path) || !strings.Contains(r.stderr, "permission denied") || strings.Contains(r.stderr, "no such file") {
				t.Errorf("hoist %s of a store in an unsearchable directory: exit %d\n%s", args[0], r.code, r.stderr)
			}
		}
	})
}
