package proxy_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/hoist-mcp/hoist/internal/testbin"
)

// TestListenSessionCapUnderBurst opens 100 sessions at once: exactly 64 get
// a session and a server, the rest 503, and no server is started for them.
// (The cap used to be checked before the server started and the session
// counted after, so a burst got past it: 100 at once opened 68.)
func TestListenSessionCapUnderBurst(t *testing.T) {
	const burst = 100
	pids := t.TempDir()
	cmd, env := fake("answer", "HOIST_FAKE_PIDDIR="+pids)
	l := startListenWith(t, env, append([]string{"--"}, cmd...)...)

	statuses := make([]int, burst)
	errs := make([]error, burst)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range burst {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			req, _ := http.NewRequest("POST", l.url, strings.NewReader(strings.TrimSpace(init16(1))))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				errs[i] = err
				return
			}
			resp.Body.Close()
			statuses[i] = resp.StatusCode
		}()
	}
	close(start)
	wg.Wait()
	count := map[int]int{}
	for i, s := range statuses {
		if errs[i] != nil {
			t.Fatalf("request %d: %v", i, errs[i])
		}
		count[s]++
	}
	if count[200] != 64 || count[503] != burst-64 || len(count) != 2 {
		t.Errorf("statuses %v, want 64 × 200 and %d × 503", count, burst-64)
	}
	started, _ := os.ReadDir(pids)
	if len(started) > 64 {
		t.Errorf("%d servers started, want at most 64", len(started))
	}
	l.cmd.Process.Signal(syscall.SIGTERM)
	if code := l.wait(); code != 0 {
		t.Errorf("exit %d after SIGTERM; stderr:\n%s", code, l.stderr)
	}
}

// TestListenBearerScheme checks that the scheme of Authorization is matched
// whatever its case (RFC 9110 §11.1), and only the scheme.
func TestListenBearerScheme(t *testing.T) {
	const token = "tok-c4se"
	file := filepath.Join(t.TempDir(), "token")
	os.WriteFile(file, []byte(token+"\n"), 0o600)
	l := startListen(t, "--listen-token-file", file, "--", testbin.Build(t, "hoist-mcp-demo"))
	for _, tc := range []struct {
		auth   string
		status int
	}{
		{"Bearer " + token, 200},
		{"bearer " + token, 200},
		{"BEARER " + token, 200},
		{"bEaReR   " + token, 200},
		{"Bearer " + strings.ToUpper(token), 401},
		{"Basic " + token, 401},
		{"Bearer" + token, 401},
		{"bearer", 401},
		{token, 401},
	} {
		r := l.do("POST", strings.TrimSpace(init16(1)), func(r *http.Request) { r.Header.Set("Authorization", tc.auth) })
		if r.status != tc.status {
			t.Errorf("Authorization: %q: status %d, want %d", tc.auth, r.status, tc.status)
		}
	}
	l.cmd.Process.Signal(syscall.SIGTERM)
	l.wait()
}

// TestListenUnspecifiedAddress checks the URL printed for an address that
// means every interface: one a host on this machine can use, with a note on
// stderr that the proxy listens on every interface.
func TestListenUnspecifiedAddress(t *testing.T) {
	const token = "tok-any"
	file := filepath.Join(t.TempDir(), "token")
	os.WriteFile(file, []byte(token+"\n"), 0o600)
	for _, tc := range []struct{ addr, prefix string }{
		{"0.0.0.0:0", "http://127.0.0.1:"},
		{":0", "http://127.0.0.1:"},
		{"[::]:0", "http://[::1]:"},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			p := startProxy(t, nil, "--listen", tc.addr, "--listen-token-file", file, "--", testbin.Build(t, "hoist-mcp-demo"))
			u := strings.TrimSpace(p.readLine())
			if !strings.HasPrefix(u, tc.prefix) || !strings.HasSuffix(u, "/mcp") {
				t.Fatalf("--listen %s printed %q, want %s<port>/mcp", tc.addr, u, tc.prefix)
			}
			l := &listenProc{proc: p, url: u}
			l.initialize(func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+token) })
			p.cmd.Process.Signal(syscall.SIGTERM)
			p.wait()
			if !strings.Contains(p.stderr.String(), "every interface") {
				t.Errorf("stderr does not say the proxy listens on every interface:\n%s", p.stderr)
			}
		})
	}
}

// TestListenNamesOddMember (issue 23): a body whose member name a lenient
// decoder reads one way and an exact one another ("Method" for "method")
// is answered 400, and the message names the member, so that the host's
// author can see what to fix.
func TestListenNamesOddMember(t *testing.T) {
	l := startListen(t, "--", testbin.Build(t, "hoist-mcp-demo"))
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"Method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`,
		`{"jsonrpc":"2.0","id":1,"Method":"tools/call","params":{"name":"lookup","arguments":{}}}`,
	} {
		r := l.do("POST", body, nil)
		if r.status != 400 || !strings.Contains(r.body, `\"Method\"`) {
			t.Errorf("POST %s: %d %s, want 400 naming the member \"Method\"", body, r.status, r.body)
		}
	}
}
