package proxy_test

import (
	"errors"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// serverPid reads the pid the "answer" fake server puts in every result.
func serverPid(t *testing.T, answer string) int {
	t.Helper()
	m := regexp.MustCompile(`"result":\{"pid":(\d+)\}`).FindStringSubmatch(answer)
	if m == nil {
		t.Fatalf("no pid in the server's answer %q", answer)
	}
	pid, _ := strconv.Atoi(m[1])
	return pid
}

// alive reports whether a process with pid exists, zombies included.
func alive(pid int) bool {
	return !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// killLeftover makes sure a server the test saw does not outlive it, when
// the proxy left it behind.
func killLeftover(t *testing.T, pid int) {
	t.Cleanup(func() {
		if alive(pid) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
}

// startListenWith is startListen with env added for the fake servers.
func startListenWith(t *testing.T, env []string, args ...string) *listenProc {
	t.Helper()
	p := startProxy(t, env, append([]string{"--listen", "127.0.0.1:0"}, args...)...)
	u := strings.TrimSpace(p.readLine())
	if !strings.HasPrefix(u, "http://127.0.0.1:") || !strings.HasSuffix(u, "/mcp") {
		t.Fatalf("--listen printed %q, want its URL", u)
	}
	return &listenProc{proc: p, url: u}
}

// jsonOnly makes a request take its answer as one JSON body.
func jsonOnly(r *http.Request) { r.Header.Set("Accept", "application/json") }

// TestListenSigtermLeavesNoServer sends SIGTERM to hoist-mcp --listen whose
// server ignores both its stdin closing and SIGTERM. The proxy must SIGKILL
// it at 2 × --stop-grace and exit only once it is gone. (It used to give up
// at a fixed 10 s, the moment its default 5 s grace put the SIGKILL, and
// exit leaving the server running.)
func TestListenSigtermLeavesNoServer(t *testing.T) {
	t.Parallel()
	cmd, env := fake("answer", "HOIST_FAKE_LINGER=1", "HOIST_FAKE_IGNORE_TERM=1")
	l := startListenWith(t, env, append([]string{"--stop-grace", "5s", "--"}, cmd...)...)
	r := l.do("POST", strings.TrimSpace(init16(1)), jsonOnly)
	if r.status != 200 {
		t.Fatalf("initialize: %d %s", r.status, r.body)
	}
	pid := serverPid(t, r.body)
	killLeftover(t, pid)
	l.cmd.Process.Signal(syscall.SIGTERM)
	if code := l.wait(); code != 0 {
		t.Errorf("exit %d after SIGTERM, want 0", code)
	}
	if alive(pid) {
		t.Errorf("the server (pid %d) is still running after the proxy exited; stderr:\n%s", pid, l.stderr)
	}
	if !strings.Contains(l.stderr.String(), "sending SIGKILL") {
		t.Errorf("stderr does not say the server was killed:\n%s", l.stderr)
	}
}

// TestStdioSigtermLeavesNoServer is the same for the stdio proxy: SIGTERM
// to it stops the server in steps, and it exits with the server gone.
func TestStdioSigtermLeavesNoServer(t *testing.T) {
	cmd, env := fake("answer", "HOIST_FAKE_LINGER=1", "HOIST_FAKE_IGNORE_TERM=1")
	p := startProxy(t, env, append([]string{"--stop-grace", "100ms", "--"}, cmd...)...)
	p.send(init16(1))
	pid := serverPid(t, p.readLine())
	killLeftover(t, pid)
	p.cmd.Process.Signal(syscall.SIGTERM)
	if code := p.wait(); code != 128+9 {
		t.Errorf("exit %d, want %d (the server's SIGKILL); stderr:\n%s", code, 128+9, p.stderr)
	}
	if alive(pid) {
		t.Errorf("the server (pid %d) is still running after the proxy exited", pid)
	}
}
