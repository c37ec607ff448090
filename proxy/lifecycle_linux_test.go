package proxy_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hoist-mcp/hoist/internal/testbin"
)

// prSetChildSubreaper is PR_SET_CHILD_SUBREAPER of prctl(2).
const prSetChildSubreaper = 36

var subreaper sync.Once

// adoptOrphans makes the test process the subreaper of everything it
// starts: a process whose parent dies becomes the test's child rather than
// init's, so the test can wait for it instead of polling for it.
func adoptOrphans(t *testing.T) {
	t.Helper()
	var err error
	subreaper.Do(func() {
		if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); e != 0 {
			err = e
		}
	})
	if err != nil {
		t.Fatalf("prctl(PR_SET_CHILD_SUBREAPER): %v", err)
	}
}

// waitOrphans waits for the orphaned processes pids, now the test's
// children, to exit and reaps them. It fails the test for each one still
// running at a generous bound, and kills it then.
func waitOrphans(t *testing.T, pids ...int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for _, pid := range pids {
		done := make(chan error, 1)
		go func() {
			var ws syscall.WaitStatus
			_, err := syscall.Wait4(pid, &ws, 0, nil)
			done <- err
		}()
		bound := time.NewTimer(time.Until(deadline))
		select {
		case err := <-done:
			bound.Stop()
			if err != nil && !errors.Is(err, syscall.ECHILD) {
				t.Fatalf("waiting for the server: %v", err)
			}
			continue
		case <-bound.C:
		}
		if !zombie(pid) {
			t.Errorf("the server (pid %d) outlived the proxy killed with SIGKILL", pid)
		}
		syscall.Kill(pid, syscall.SIGKILL)
		<-done
	}
}

// zombie reports whether pid has exited and waits to be reaped.
func zombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state ...: comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] == 'Z'
}

// TestSigkilledProxyTakesItsServer kills hoist-mcp with SIGKILL, which it
// cannot handle, while its server ignores its stdin closing: the server must
// die with the proxy rather than run on with init as its parent. In --listen
// the servers are started from HTTP handlers, on whatever thread runs them.
func TestSigkilledProxyTakesItsServer(t *testing.T) {
	adoptOrphans(t)
	cmd, env := fake("answer", "HOIST_FAKE_LINGER=1")
	t.Run("stdio", func(t *testing.T) {
		p := startProxy(t, env, append([]string{"--"}, cmd...)...)
		p.send(init16(1))
		pid := serverPid(t, p.readLine())
		p.cmd.Process.Signal(syscall.SIGKILL)
		p.wait()
		waitOrphans(t, pid)
	})
	t.Run("listen", func(t *testing.T) {
		l := startListenWith(t, env, append([]string{"--"}, cmd...)...)
		var pids []int
		for i := 0; i < 4; i++ {
			r := l.do("POST", strings.TrimSpace(init16(1)), jsonOnly)
			if r.status != 200 {
				t.Fatalf("initialize: %d %s", r.status, r.body)
			}
			pids = append(pids, serverPid(t, r.body))
		}
		l.cmd.Process.Signal(syscall.SIGKILL)
		l.wait()
		waitOrphans(t, pids...)
	})
}

// descendants returns the pids of every process below pid, read from /proc.
func descendants(t *testing.T, pid int) []int {
	t.Helper()
	procs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	children := map[int][]int{}
	for _, p := range procs {
		n, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", n))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if ppid, err := strconv.Atoi(f[1]); err == nil {
			children[ppid] = append(children[ppid], n)
		}
	}
	var out []int
	for queue := []int{pid}; len(queue) > 0; queue = queue[1:] {
		out = append(out, children[queue[0]]...)
		queue = append(queue, children[queue[0]]...)
	}
	return out
}

// running reports whether pid runs: it exists and has not exited (a
// zombie waits only to be reaped).
func running(pid int) bool {
	return alive(pid) && !zombie(pid)
}

// checkNoDescendant fails the test for each of pids still running once
// the proxy has exited, and kills it.
func checkNoDescendant(t *testing.T, stderr fmt.Stringer, pids []int) {
	t.Helper()
	for _, pid := range pids {
		if running(pid) {
			cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			t.Errorf("pid %d (%s) outlived the proxy; stderr:\n%s", pid, bytes.ReplaceAll(cmdline, []byte{0}, []byte(" ")), stderr)
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// TestWrappedServerLeavesNoDescendant starts the server through a wrapper,
// as most hosts configure MCP servers (sh -c '…', npx …): a server that
// ignores its stdin closing must be stopped with every process the wrapper
// started, not only the wrapper, whose children would run on with init as
// their parent (issue 25, item 1).
func TestWrappedServerLeavesNoDescendant(t *testing.T) {
	// sh -c runs the server as its child ("; true" keeps sh from exec'ing it).
	cmd, env := fake("answer", "HOIST_FAKE_LINGER=1")
	wrapped := []string{"sh", "-c", `"$0"; true`, cmd[0]}
	for _, tc := range []struct {
		name string
		env  []string
		said string
	}{
		{"sh -c, server ignores its stdin closing", env, "sending SIGTERM to its process group"},
		{"sh -c, server ignores SIGTERM too", append(env, "HOIST_FAKE_IGNORE_TERM=1"), "sending SIGKILL to its process group"},
	} {
		t.Run(tc.name+", host leaves", func(t *testing.T) {
			t.Parallel()
			p := startProxy(t, tc.env, append([]string{"--stop-grace", "200ms", "--"}, wrapped...)...)
			p.send(init16(1))
			server := serverPid(t, p.readLine())
			below := descendants(t, p.cmd.Process.Pid)
			if !slices.Contains(below, server) || len(below) < 2 {
				t.Fatalf("the proxy's descendants %v: want sh and the server %d", below, server)
			}
			killLeftover(t, server)
			p.finish()
			checkNoDescendant(t, p.stderr, below)
			if !strings.Contains(p.stderr.String(), tc.said) {
				t.Errorf("stderr does not say %q:\n%s", tc.said, p.stderr)
			}
		})
	}
	t.Run("sh -c, proxy gets SIGTERM", func(t *testing.T) {
		t.Parallel()
		p := startProxy(t, env, append([]string{"--stop-grace", "200ms", "--"}, wrapped...)...)
		p.send(init16(1))
		server := serverPid(t, p.readLine())
		killLeftover(t, server)
		below := descendants(t, p.cmd.Process.Pid)
		p.cmd.Process.Signal(syscall.SIGTERM)
		p.wait()
		checkNoDescendant(t, p.stderr, below)
	})
	t.Run("sh -c, --listen", func(t *testing.T) {
		t.Parallel()
		l := startListenWith(t, env, append([]string{"--stop-grace", "200ms", "--"}, wrapped...)...)
		var below []int
		for i := 0; i < 2; i++ {
			r := l.do("POST", strings.TrimSpace(init16(1)), jsonOnly)
			if r.status != 200 {
				t.Fatalf("initialize: %d %s", r.status, r.body)
			}
			killLeftover(t, serverPid(t, r.body))
		}
		below = descendants(t, l.cmd.Process.Pid)
		if len(below) < 4 {
			t.Fatalf("the proxy's descendants %v: want two shells and their servers", below)
		}
		l.cmd.Process.Signal(syscall.SIGTERM)
		l.wait()
		checkNoDescendant(t, l.stderr, below)
	})
	// npx runs the package's bin through a shell of its own: sh → npm exec →
	// sh → node. The server's simulated logging keeps node running after
	// its stdin closes, as a server with a timer does.
	t.Run("npx server-everything", func(t *testing.T) {
		t.Parallel()
		peers := filepath.Dir(testbin.Peers(t))
		p := startProxy(t, nil, "--stop-grace", "500ms", "--",
			"sh", "-c", `npx --no-install --prefix "$0" mcp-server-everything; true`, peers)
		p.send(init16(1))
		p.readUntil(`"id":1`)
		p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n",
			`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"toggle-simulated-logging","arguments":{}}}`+"\n")
		p.readUntil(`"id":2`)
		below := descendants(t, p.cmd.Process.Pid)
		var node bool
		for _, pid := range below {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			node = node || bytes.Contains(b, []byte("node")) && bytes.Contains(b, []byte(".bin/mcp-server-everything"))
		}
		if !node {
			t.Fatalf("no node running server-everything among the proxy's descendants %v", below)
		}
		p.finish()
		checkNoDescendant(t, p.stderr, below)
		if !strings.Contains(p.stderr.String(), "sending SIGTERM to its process group") {
			t.Errorf("stderr does not say the group was sent SIGTERM:\n%s", p.stderr)
		}
	})
}
