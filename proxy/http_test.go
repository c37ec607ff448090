package proxy_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hoist-mcp/hoist/internal/testbin"
)

// startDemoHTTP starts hoist-mcp-demo --http on a free port, with args
// before it, and returns its URL.
func startDemoHTTP(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(testbin.Build(t, "hoist-mcp-demo"), append(args, "--http", "127.0.0.1:0")...)
	cmd.Env = testbin.Env()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	url, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("hoist-mcp-demo --http printed no URL: %v", err)
	}
	return strings.TrimSpace(url)
}

// tap is a reverse proxy in front of an upstream that remembers each
// request's method and headers, and can cut the first GET stream short.
type tap struct {
	mu       sync.Mutex
	requests []*http.Request
	cutGET   bool
	gets     int
}

func newTap(t *testing.T, target string) (*tap, string) {
	u, _ := url.Parse(target)
	tp := &tap{}
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host})
	rp.FlushInterval = -1
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tp.mu.Lock()
		tp.requests = append(tp.requests, r.Clone(r.Context()))
		cut := false
		if r.Method == http.MethodGet {
			tp.gets++
			cut = tp.cutGET && tp.gets == 1
		}
		tp.mu.Unlock()
		if cut {
			// Answer as a stream and drop it at once.
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			return
		}
		// Read the body before proxying: the server stops reading a request
		// body once its handler writes the response head, and the reverse
		// proxy writes it when the upstream answers, which an upstream that
		// answers before the last read of the body races with (the proxy
		// then cuts the upstream's answer short).
		if r.Body != nil {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return tp, srv.URL + u.Path
}

func (tp *tap) snapshot() []*http.Request {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return append([]*http.Request(nil), tp.requests...)
}

// readUntil reads host lines until one contains want, and returns them all.
func (p *proc) readUntil(want string) []string {
	p.t.Helper()
	var lines []string
	for {
		l := p.readLine()
		lines = append(lines, l)
		if strings.Contains(l, want) {
			return lines
		}
	}
}

func init16(id int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"0"}}}`+"\n", id)
}

// TestUpstreamDemo drives hoist-mcp --upstream in front of hoist-mcp-demo
// --http, which insists on the session id and protocol version: answers
// as lines from JSON bodies and event streams, the GET stream's messages,
// the header from the environment, and the session's end.
func TestUpstreamDemo(t *testing.T) {
	tp, target := newTap(t, startDemoHTTP(t))
	tp.cutGET = true // the proxy must open the GET stream again
	dir := t.TempDir()
	const secret = "s3cret-upstream-value"
	p := startProxy(t, []string{"DEMO_TOKEN=" + secret}, "--record", dir,
		"--upstream", strings.Replace(target, "http://", "http://user:pw@", 1)+"?api_key=k-123",
		"--upstream-header", "X-Demo-Token=DEMO_TOKEN")

	p.send(init16(1))
	if l := p.readLine(); !strings.Contains(l, `"serverInfo":{"name":"hoist-mcp-demo"`) {
		t.Fatalf("initialize answer: %s", l)
	}
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
	p.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}` + "\n")
	if l := p.readLine(); !strings.Contains(l, `"name":"lookup"`) {
		t.Fatalf("tools/list answer: %s", l)
	}
	// The GET stream: once the proxy has reopened it, a call's notify
	// arrives on it.
	waitFor(t, "a second GET stream", func() bool {
		tp.mu.Lock()
		defer tp.mu.Unlock()
		return tp.gets >= 2
	})
	p.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"lookup","arguments":{"text":"hi","notify":"from the GET stream"},"_meta":{"progressToken":"tok-3"}}}` + "\n")
	got := strings.Join(p.readUntil(`"id":3`), "")
	if !strings.Contains(got, `"method":"notifications/progress","params":{"progress":1,"progressToken":"tok-3"`) {
		t.Errorf("no progress notification before the answer:\n%s", got)
	}
	if !strings.Contains(got+strings.Join(p.readUntilOrNil(`from the GET stream`, got), ""), `from the GET stream`) {
		t.Errorf("the GET stream's message did not reach the host")
	}

	// The server ends the session: later requests fail at once.
	p.send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"update","arguments":{"end_session":true}}}` + "\n")
	p.readUntil(`"id":4`)
	p.send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"lookup","arguments":{}}}` + "\n")
	if l := p.readUntil(`"id":5`); !strings.Contains(l[len(l)-1], `"error":{"code":-32000,"message":"hoist-mcp: the MCP server ended the session (HTTP 404)`) {
		t.Errorf("request after the session ended: %s", l[len(l)-1])
	}
	p.send(`{"jsonrpc":"2.0","id":6,"method":"ping"}` + "\n")
	if l := p.readLine(); !strings.Contains(l, `"id":6,"error"`) {
		t.Errorf("second request after the session ended: %s", l)
	}
	if _, code := p.finish(); code != 0 {
		t.Errorf("exit %d, want 0 once the session ended; stderr:\n%s", code, p.stderr)
	}

	reqs := tp.snapshot()
	sid := ""
	for i, r := range reqs {
		if r.Header.Get("X-Demo-Token") != secret {
			t.Errorf("request %d (%s) lacks the --upstream-header value", i, r.Method)
		}
		if i == 0 {
			continue
		}
		if sid == "" {
			sid = r.Header.Get("Mcp-Session-Id")
		}
		if r.Header.Get("Mcp-Session-Id") != sid || sid == "" || r.Header.Get("Mcp-Protocol-Version") != "2025-06-18" {
			t.Errorf("request %d (%s): session %q, version %q", i, r.Method, r.Header.Get("Mcp-Session-Id"), r.Header.Get("Mcp-Protocol-Version"))
		}
	}
	header, lines, path := readLog(t, dir)
	if want := strings.Replace(target, "http://", "http://", 1) + "?api_key=<redacted>"; header["upstream"] != want {
		t.Errorf("header upstream = %v, want %s", header["upstream"], want)
	}
	froms := map[string]int{}
	var own []string
	for _, l := range lines {
		froms[l.From]++
		if l.From == "proxy" {
			own = append(own, string(l.Message))
		}
	}
	if froms["client"] != 7 || froms["proxy"] != 2 || froms["server"] < 5 {
		t.Errorf("log lines by sender %v, want 7 client, 2 proxy (the refusals), 5 or more server; the proxy's:\n%s\nstderr:\n%s", froms, strings.Join(own, "\n"), p.stderr)
	}
	data, _ := os.ReadFile(path)
	for _, s := range []string{secret, "k-123", "user:pw"} {
		if bytes.Contains(data, []byte(s)) || strings.Contains(p.stderr.String(), s) {
			t.Errorf("the secret %q reached the log or stderr", s)
		}
	}
}

// readUntilOrNil reads until want unless already holds it.
func (p *proc) readUntilOrNil(want, already string) []string {
	if strings.Contains(already, want) {
		return nil
	}
	return p.readUntil(want)
}

// waitFor polls cond until it holds, failing after a generous bound.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestUpstreamUnreachable checks that a request to a server that cannot be
// reached is answered with a JSON-RPC error, so the host never waits.
func TestUpstreamUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	dead := srv.URL + "/mcp"
	srv.Close()
	p := startProxy(t, nil, "--upstream", dead)
	p.send(init16(1))
	if l := p.readLine(); !strings.Contains(l, `{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"hoist-mcp: cannot reach the MCP server at `+dead) {
		t.Errorf("answer %s", l)
	}
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
	if _, code := p.finish(); code != 0 {
		t.Errorf("exit %d", code)
	}
}

// TestUpstreamRefused checks that an HTTP error answers the request with a
// JSON-RPC error naming the status.
func TestUpstreamRefused(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no entry", http.StatusForbidden)
	}))
	defer srv.Close()
	p := startProxy(t, nil, "--upstream", srv.URL+"/mcp")
	p.send(`{"jsonrpc":"2.0","id":"a","method":"initialize","params":{}}` + "\n")
	if l := p.readLine(); !strings.Contains(l, `"id":"a","error":{"code":-32000,"message":"hoist-mcp: the MCP server refused the request: HTTP 403: no entry"}`) {
		t.Errorf("answer %s", l)
	}
	p.finish()
}

// listenProc is hoist-mcp --listen under test.
type listenProc struct {
	*proc
	url string
}

func startListen(t *testing.T, args ...string) *listenProc {
	t.Helper()
	p := startProxy(t, nil, append([]string{"--listen", "127.0.0.1:0"}, args...)...)
	u := strings.TrimSpace(p.readLine())
	if !strings.HasPrefix(u, "http://127.0.0.1:") || !strings.HasSuffix(u, "/mcp") {
		t.Fatalf("--listen printed %q, want its URL", u)
	}
	return &listenProc{proc: p, url: u}
}

type httpResult struct {
	status int
	header http.Header
	body   string
}

// do sends one request to the proxy; mod may change it first.
func (l *listenProc) do(method, body string, mod func(*http.Request)) httpResult {
	l.t.Helper()
	req, _ := http.NewRequest(method, l.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if mod != nil {
		mod(req)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		l.t.Fatalf("%s %s: %v", method, l.url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return httpResult{resp.StatusCode, resp.Header, string(b)}
}

// initialize opens a session and returns its id.
func (l *listenProc) initialize(mod func(*http.Request)) string {
	l.t.Helper()
	r := l.do("POST", strings.TrimSpace(init16(1)), mod)
	if r.status != 200 || r.header.Get("Mcp-Session-Id") == "" || !strings.Contains(r.body, `"serverInfo"`) {
		l.t.Fatalf("initialize: %d %v %s", r.status, r.header, r.body)
	}
	return r.header.Get("Mcp-Session-Id")
}

func session(id string) func(*http.Request) {
	return func(r *http.Request) { r.Header.Set("Mcp-Session-Id", id) }
}

// TestListenLoopbackRules checks who may connect without a token, and the
// limits on sessions and messages.
func TestListenLoopbackRules(t *testing.T) {
	l := startListen(t, "--", testbin.Build(t, "hoist-mcp-demo"))
	port := strings.TrimSuffix(strings.TrimPrefix(l.url, "http://127.0.0.1:"), "/mcp")

	sid := l.initialize(nil)
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"lookup","arguments":{"text":"x"}}}`
	if r := l.do("POST", call, func(r *http.Request) { session(sid)(r); r.Header.Set("Accept", "application/json") }); r.status != 200 || r.header.Get("Content-Type") != "application/json" || !strings.Contains(r.body, `"id":2,"jsonrpc":"2.0","result"`) {
		t.Errorf("JSON-only host: %d %s %s", r.status, r.header.Get("Content-Type"), r.body)
	}
	if r := l.do("POST", call, session(sid)); r.status != 200 || !strings.HasPrefix(r.body, "event: message\ndata: {\"id\":2,") {
		t.Errorf("event-stream host: %d %q", r.status, r.body)
	}
	for _, tc := range []struct {
		name   string
		mod    func(*http.Request)
		status int
	}{
		{"rebinding Host", func(r *http.Request) { r.Host = "evil.example:" + port }, 403},
		{"foreign Origin", func(r *http.Request) { r.Header.Set("Origin", "https://evil.example") }, 403},
		{"own Origin", func(r *http.Request) { r.Header.Set("Origin", "http://127.0.0.1:"+port) }, 200},
		{"localhost Host", func(r *http.Request) { r.Host = "localhost:" + port }, 200},
		{"no session id", func(r *http.Request) { r.Header.Del("Mcp-Session-Id") }, 400},
		{"unknown session", func(r *http.Request) { r.Header.Set("Mcp-Session-Id", "nope") }, 404},
		{"not JSON", func(r *http.Request) { r.Header.Set("Content-Type", "text/plain") }, 415},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := l.do("POST", call, func(r *http.Request) { session(sid)(r); tc.mod(r) })
			if r.status != tc.status {
				t.Errorf("status %d, want %d (%s)", r.status, tc.status, r.body)
			}
		})
	}
	t.Run("5 MiB body", func(t *testing.T) {
		big := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"lookup","arguments":{"text":"` + strings.Repeat("x", 5<<20) + `"}}}`
		if r := l.do("POST", big, session(sid)); r.status != 413 {
			t.Errorf("status %d, want 413", r.status)
		}
	})
	t.Run("65th session", func(t *testing.T) {
		ids := []string{sid}
		for len(ids) < 64 {
			ids = append(ids, l.initialize(nil))
		}
		if r := l.do("POST", strings.TrimSpace(init16(1)), nil); r.status != 503 {
			t.Errorf("65th session: status %d, want 503", r.status)
		}
		for _, id := range ids[1:] {
			if r := l.do("DELETE", "", session(id)); r.status != 204 {
				t.Errorf("DELETE: %d", r.status)
			}
		}
		if r := l.do("POST", call, session(ids[1])); r.status != 404 {
			t.Errorf("after DELETE: %d, want 404", r.status)
		}
	})
	l.cmd.Process.Signal(syscall.SIGTERM)
	if code := l.wait(); code != 0 {
		t.Errorf("exit %d after SIGTERM", code)
	}
}

// TestListenToken checks bearer tokens: required, compared, and kept out of
// the process list, logs and messages.
func TestListenToken(t *testing.T) {
	const token = "tok-7f3a9c"
	file := filepath.Join(t.TempDir(), "token")
	os.WriteFile(file, []byte(token+"\n"), 0o600)
	dir := t.TempDir()
	l := startListen(t, "--listen-token-file", file, "--record", dir, "--", testbin.Build(t, "hoist-mcp-demo"))
	bearer := func(v string) func(*http.Request) { return func(r *http.Request) { r.Header.Set("Authorization", v) } }
	if r := l.do("POST", strings.TrimSpace(init16(1)), nil); r.status != 401 {
		t.Errorf("no token: %d, want 401", r.status)
	}
	if r := l.do("POST", strings.TrimSpace(init16(1)), bearer("Bearer wrong")); r.status != 401 {
		t.Errorf("wrong token: %d, want 401", r.status)
	}
	l.initialize(bearer("Bearer " + token))
	if cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", l.cmd.Process.Pid)); bytes.Contains(cmdline, []byte(token)) {
		t.Error("the token is in the process list")
	}
	l.cmd.Process.Signal(syscall.SIGTERM)
	l.wait()
	filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if b, _ := os.ReadFile(path); info.Mode().IsRegular() && bytes.Contains(b, []byte(token)) {
			t.Errorf("%s holds the token", path)
		}
		return nil
	})
	if strings.Contains(l.stderr.String(), token) {
		t.Error("stderr holds the token")
	}
}

// TestListenNonLoopbackNeedsToken checks the usage error.
func TestListenNonLoopbackNeedsToken(t *testing.T) {
	p := startProxy(t, nil, "--listen", "0.0.0.0:0", "--", "true")
	if code := p.wait(); code != 2 || !strings.Contains(p.stderr.String(), "only on a loopback address") {
		t.Errorf("exit %d, stderr %s", code, p.stderr)
	}
}

// TestListenIdleAndSigterm checks idle expiry (404 after) and that SIGTERM
// with sessions open leaves each log complete.
func TestListenIdleAndSigterm(t *testing.T) {
	dir := t.TempDir()
	l := startListen(t, "--record", dir, "--listen-idle", "0.005", "--", testbin.Build(t, "hoist-mcp-demo"))
	idle := l.initialize(nil)
	// Any request would keep the session alive: watch what the proxy says.
	waitFor(t, "the idle session to end", func() bool {
		return strings.Contains(l.stderr.String(), "ended: idle for more than")
	})
	if r := l.do("POST", `{"jsonrpc":"2.0","id":9,"method":"ping"}`, session(idle)); r.status != 404 {
		t.Errorf("request to an expired session: %d, want 404", r.status)
	}
	l.cmd.Process.Signal(syscall.SIGTERM)
	l.wait()

	dir2 := t.TempDir()
	l = startListen(t, "--record", dir2, "--", testbin.Build(t, "hoist-mcp-demo"))
	for i := 0; i < 3; i++ {
		sid := l.initialize(func(r *http.Request) { r.Header.Set("Hoist-Session", "agent-7") })
		l.do("POST", fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"lookup","arguments":{"n":%d}}}`, i), session(sid))
	}
	l.cmd.Process.Signal(syscall.SIGTERM)
	if code := l.wait(); code != 0 {
		t.Errorf("exit %d after SIGTERM", code)
	}
	paths, _ := filepath.Glob(filepath.Join(dir2, "*.jsonl"))
	if len(paths) != 3 {
		t.Fatalf("want 3 logs, got %v", paths)
	}
	for i, path := range paths {
		if !strings.HasSuffix(path, fmt.Sprintf("-%d.jsonl", i+1)) {
			t.Errorf("log %s is not named <start>-<pid>-<n>.jsonl", path)
		}
		data, _ := os.ReadFile(path)
		rows := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
		if len(rows) != 5 || !strings.HasSuffix(string(data), "\n") {
			t.Errorf("%s: %d lines, want the header and 4 wire lines, complete", path, len(rows))
		}
		var h map[string]any
		json.Unmarshal([]byte(rows[0]), &h)
		if h["host_session"] != "agent-7" {
			t.Errorf("%s: host_session %v, want the Hoist-Session header's", path, h["host_session"])
		}
	}
}

// TestListenRealPeers serves @modelcontextprotocol/server-everything (stdio)
// over --listen to the TypeScript SDK client: tools, progress, a long-running
// tool and a sampling request the client answers.
func TestListenRealPeers(t *testing.T) {
	peers := testbin.Peers(t)
	dir := t.TempDir()
	l := startListen(t, "--record", dir, "--", filepath.Join(peers, ".bin", "mcp-server-everything"))
	out := runClient(t, peers, "http", l.url)
	checkEverything(t, out)
	l.cmd.Process.Signal(syscall.SIGTERM)
	l.wait()
	_, lines, _ := readLog(t, dir)
	checkEverythingLog(t, lines)
}

// TestUpstreamRealPeers puts --upstream in front of server-everything's
// Streamable HTTP mode, driven by the TypeScript SDK client over stdio.
func TestUpstreamRealPeers(t *testing.T) {
	peers := testbin.Peers(t)
	url := startEverythingHTTP(t, peers)
	dir := t.TempDir()
	out := runClient(t, peers, "stdio", testbin.Build(t, "hoist-mcp"), "--record", dir, "--upstream", url)
	checkEverything(t, out)
	_, lines, _ := readLog(t, dir)
	checkEverythingLog(t, lines)
}

// startEverythingHTTP starts server-everything's Streamable HTTP mode on a
// free port and returns its URL once it listens.
func startEverythingHTTP(t *testing.T, peers string) string {
	t.Helper()
	port := freePort(t)
	srv := exec.Command(filepath.Join(peers, ".bin", "mcp-server-everything"), "streamableHttp")
	srv.Env = append(os.Environ(), "PORT="+port)
	stderr, _ := srv.StderrPipe()
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	// It says on stderr when it listens (and logs requests on stdout,
	// which exec discards).
	br := bufio.NewReader(stderr)
	for {
		l, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("server-everything did not start: %v", err)
		}
		if strings.Contains(l, port) {
			break
		}
	}
	go io.Copy(io.Discard, br)
	return "http://127.0.0.1:" + port + "/mcp"
}

func freePort(t *testing.T) string {
	srv := httptest.NewServer(http.NotFoundHandler())
	port := strings.TrimPrefix(srv.URL, "http://127.0.0.1:")
	srv.Close()
	return port
}

type clientOut struct {
	Progress []struct{ Progress, Total float64 }
	Calls    map[string]json.RawMessage
	Sampling int
	Server   string
	Tools    []string
}

func runClient(t *testing.T, peers string, args ...string) clientOut {
	t.Helper()
	cmd := exec.Command("node", append([]string{filepath.Join(testbin.Root(), "proxy", "testdata", "client.mjs"), peers}, args...)...)
	cmd.Env = testbin.Env()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("the TypeScript client failed: %v\n%s", err, stderr.String())
	}
	var out clientOut
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("client output %q: %v", b, err)
	}
	return out
}

func checkEverything(t *testing.T, out clientOut) {
	t.Helper()
	if out.Server != "mcp-servers/everything" || len(out.Tools) < 10 {
		t.Errorf("server %q with %d tools", out.Server, len(out.Tools))
	}
	if !strings.Contains(string(out.Calls["echo"]), "Echo: hello over http") {
		t.Errorf("echo: %s", out.Calls["echo"])
	}
	if !strings.Contains(string(out.Calls["trigger-long-running-operation"]), "Long running operation completed") {
		t.Errorf("long-running: %s", out.Calls["trigger-long-running-operation"])
	}
	// The SDK drops a progress notification that arrives with the result,
	// so the client may see 2 or 3; the log below has all 3.
	if len(out.Progress) < 2 {
		t.Errorf("progress notifications seen by the client: %v", out.Progress)
	}
	if out.Sampling != 1 || !strings.Contains(string(out.Calls["trigger-sampling-request"]), "sampled by the test") {
		t.Errorf("sampling: %d requests, result %s", out.Sampling, out.Calls["trigger-sampling-request"])
	}
}

func checkEverythingLog(t *testing.T, lines []logLine) {
	t.Helper()
	progress, sampling, answered := 0, 0, 0
	for _, l := range lines {
		s := string(l.Message)
		switch {
		case l.From == "server" && strings.Contains(s, `"method":"notifications/progress"`):
			progress++
		case l.From == "server" && strings.Contains(s, `"method":"sampling/createMessage"`):
			sampling++
		case l.From == "client" && strings.Contains(s, `"sampled by the test"`):
			answered++
		}
	}
	if progress != 3 || sampling != 1 || answered != 1 {
		t.Errorf("log: %d progress notifications (want 3), %d sampling requests (want 1), %d answers to them (want 1)", progress, sampling, answered)
	}
}

// TestListenContext checks {session} in --context: each HTTP session reads
// the conversation file its Hoist-Session header names.
func TestListenContext(t *testing.T) {
	dir, ctxDir := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(ctxDir, "agent-9.jsonl"), []byte(`{"role":"user","content":"hello"}`+"\n"), 0o600)
	l := startListen(t, "--record", dir, "--context", filepath.Join(ctxDir, "{session}.jsonl"), "--", testbin.Build(t, "hoist-mcp-demo"))
	sid := l.initialize(func(r *http.Request) { r.Header.Set("Hoist-Session", "agent-9") })
	l.do("POST", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"lookup","arguments":{}}}`, session(sid))
	l.cmd.Process.Signal(syscall.SIGTERM)
	l.wait()
	_, lines, _ := readLog(t, dir)
	if len(lines) < 3 || lines[2].From != "context" || string(lines[2].Message) != `{"role":"user","content":"hello"}` {
		t.Errorf("want the conversation logged after initialize, before the call; got %d lines", len(lines))
	}
}
