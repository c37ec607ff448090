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
