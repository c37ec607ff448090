package proxy_test

import (
	"encoding/json"
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

// TestServerExitAnswersInFlight (issue 23, point 5): in active mode, the
// host's requests the server read but never answered each get a JSON-RPC
// error when the server exits, before the proxy ends, so that no host
// waits for an answer that cannot come.
func TestServerExitAnswersInFlight(t *testing.T) {
	cmd, env := fake("read-then-exit", "HOIST_FAKE_READ=3")
	p := startProxy(t, env, append([]string{"--domain", "retail", "--guards", "--"}, cmd...)...)
	p.send(`{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n",
		`{"jsonrpc":"2.0","id":"two","method":"tools/call","params":{"name":"get_order_details","arguments":{"order_id":"#W1a"}}}`+"\n",
		`{"jsonrpc":"2.0","id":3,"method":"ping"}`+"\n")
	// Read before the host closes: the server exits first, while the host
	// still waits for its answers.
	lines := []string{p.readLine(), p.readLine(), p.readLine()}
	if rest, code := p.finish(); code != 0 || rest != "" || lines[0] != `{"jsonrpc":"2.0","id":1,"result":{}}`+"\n" {
		t.Fatalf("exit %d, the host got:\n%s%s\nstderr:\n%s", code, strings.Join(lines, ""), rest, p.stderr)
	}
	got := map[string]bool{}
	for _, l := range lines[1:] {
		var e struct {
			ID    json.RawMessage `json:"id"`
			Error *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal([]byte(strings.TrimSpace(l)), &e) != nil || e.Error == nil || e.Error.Code != -32000 || !strings.Contains(e.Error.Message, "closed before it answered") {
			t.Errorf("want an error for a request in flight, got %s", l)
		}
		got[string(e.ID)] = true
	}
	if !got[`"two"`] || !got["3"] {
		t.Errorf("the errors answer %v, want \"two\" and 3", got)
	}
}
