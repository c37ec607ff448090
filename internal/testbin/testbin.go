// Package testbin builds hoist's programs once per test process and finds
// the real npm peers the end-to-end tests run against, so tests drive real
// processes.
package testbin

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"net/http"
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

// ConsoleChanges follows a console's server-sent events (GET base+"/events"
// with c): each change it publishes (a frame held or gone) is one value on
// the channel, dropped when the test has not taken the last one yet. The
// stream is closed when the test ends.
func ConsoleChanges(t testing.TB, c *http.Client, base string) <-chan struct{} {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", base+"/events", nil)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	ch := make(chan struct{}, 64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(ch)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "event:") {
				select {
				case ch <- struct{}{}:
				default:
				}
			}
		}
	}()
	t.Cleanup(func() { cancel(); resp.Body.Close(); <-done })
	return ch
}

// Jaeger returns the jaeger program (Jaeger v2 all-in-one), built from the
// module internal/tools/jaeger, whose go.mod names it as a tool and keeps
// its large dependency tree out of hoist's own. The binary is kept in the
// user's cache directory under the hash of that module's go.sum, so it is
// built once per version and machine, not once per test run; a cold build
// takes minutes (scripts/test.sh builds it before the tests run).
func Jaeger(t testing.TB) string {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	if p, ok := built["jaeger"]; ok {
		return p
	}
	if err, ok := errs["jaeger"]; ok {
		t.Fatal(err)
	}
	p, err := JaegerPath()
	if err == nil {
		if _, serr := os.Stat(p); serr != nil {
			err = buildJaeger(p)
		}
	}
	if err != nil {
		errs["jaeger"] = err
		t.Fatal(err)
	}
	built["jaeger"] = p
	return p
}

// JaegerPath returns where Jaeger's binary is kept: in the user's cache
// directory ($HOIST_TOOLS_CACHE overrides it), named by the hash of
// internal/tools/jaeger/go.sum.
func JaegerPath() (string, error) {
	sum, err := os.ReadFile(filepath.Join(Root(), "internal", "tools", "jaeger", "go.sum"))
	if err != nil {
		return "", err
	}
	dir := os.Getenv("HOIST_TOOLS_CACHE")
	if dir == "" {
		c, err := os.UserCacheDir()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(c, "hoist-tools")
	}
	h := sha256.Sum256(sum)
	return filepath.Join(dir, "jaeger-"+hex.EncodeToString(h[:8])), nil
}

// buildJaeger builds the jaeger tool into out, through a temporary name so
// that a build cut short leaves no binary behind.
func buildJaeger(out string) error {
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	tmp := fmt.Sprintf("%s.%d.tmp", out, os.Getpid())
	cmd := exec.Command("go", "build", "-o", tmp, "github.com/jaegertracing/jaeger/cmd/jaeger")
	cmd.Dir = filepath.Join(Root(), "internal", "tools", "jaeger")
	if b, err := cmd.CombinedOutput(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("building jaeger: %v\n%s", err, b)
	}
	return os.Rename(tmp, out)
}
