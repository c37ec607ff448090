package proxy_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
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
