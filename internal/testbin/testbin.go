// Package testbin builds hoist's programs once per test process and finds
// the real npm peers the end-to-end tests run against, so tests drive real
// processes.
package testbin

import (
	"bufio"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

var (
	mu     sync.Mutex
	dir    string
	built  = map[string]string{}
	errs   = map[string]error{}
	rootMu sync.Once
	root   string
)

// Main runs the tests of a package that builds binaries and removes them
// afterwards: call it from TestMain as os.Exit(testbin.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	mu.Lock()
	if dir != "" {
		os.RemoveAll(dir)
	}
	mu.Unlock()
	return code
}

// Root returns the module's root directory.
func Root() string {
	rootMu.Do(func() {
		_, file, _, _ := runtime.Caller(0)
		root = filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
	})
	return root
}

// Build builds ./cmd/<name> (once per test process, with the race detector
// when the tests run with it) and returns the binary's path.
func Build(t testing.TB, name string) string {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	if p, ok := built[name]; ok {
		return p
	}
	if err, ok := errs[name]; ok {
		t.Fatal(err)
	}
	if dir == "" {
		d, err := os.MkdirTemp("", "hoist-testbin-")
		if err != nil {
			t.Fatal(err)
		}
		dir = d
	}
	out := filepath.Join(dir, name)
	args := []string{"build", "-o", out}
	if raceEnabled {
		args = append(args, "-race")
	}
	args = append(args, "./cmd/"+name)
	cmd := exec.Command("go", args...)
	cmd.Dir = Root()
	if b, err := cmd.CombinedOutput(); err != nil {
		errs[name] = fmt.Errorf("building %s: %v\n%s", name, err, b)
		t.Fatal(errs[name])
	}
	built[name] = out
	return out
}

// Peers returns peers/node_modules, where scripts/peers.sh installs the npm
// peers. When they are missing the test is skipped, or fails when
// HOIST_REQUIRE_PEERS is set (as the README's test command sets it).
func Peers(t testing.TB) string {
	t.Helper()
	nm := filepath.Join(Root(), "peers", "node_modules")
	if _, err := os.Stat(filepath.Join(nm, ".hoist-peers.sha")); err != nil {
		msg := "npm peers not installed (run scripts/peers.sh, or make test)"
		if os.Getenv("HOIST_REQUIRE_PEERS") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal("node not found on PATH")
	}
	return nm
}

// Env returns the test's environment plus extra, for processes the test
// starts. Race-enabled binaries sleep a second at exit by default
// (GORACE atexit_sleep_ms); Env turns that off so tests stay quick.
func Env(extra ...string) []string {
	env := append(os.Environ(), "GORACE=atexit_sleep_ms=0 halt_on_error=1")
	return append(env, extra...)
}

// CopyTree copies src's files into a new temporary directory, which a test
// (or a hoist it runs) may then write into, and returns the copy.
func CopyTree(t testing.TB, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(dst, filepath.Dir(rel)), 0o700); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// StartConsole starts the built `hoist console` on a free loopback port
// with args after its own --addr, waits until it says where it serves, and
// returns that base URL (http://127.0.0.1:PORT, no trailing slash) and the
// process, which is interrupted and waited for when the test ends.
func StartConsole(t testing.TB, args ...string) (string, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(Build(t, "hoist"), append([]string{"console", "--addr", "127.0.0.1:0"}, args...)...)
	cmd.Env = Env()
	errOut, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() })
	sc := bufio.NewScanner(errOut)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "hoist console: serving "); ok {
			go io.Copy(io.Discard, errOut)
			return strings.TrimSuffix(strings.Fields(rest)[0], "/"), cmd
		}
		t.Log(sc.Text())
	}
	t.Fatal("hoist console ended before it served")
	return "", nil
}
