package proxy_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// modernHeaders sets the headers a stateless-era request carries: its
// version, method and (for tools/call) name.
func modernHeaders(method, name string) func(*http.Request) {
	return func(r *http.Request) {
		r.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		r.Header.Set("Mcp-Method", method)
		if name != "" {
			r.Header.Set("Mcp-Name", name)
		}
	}
}

func both(mods ...func(*http.Request)) func(*http.Request) {
	return func(r *http.Request) {
		for _, m := range mods {
			m(r)
		}
	}
}

func hoistSession(name string) func(*http.Request) {
	return func(r *http.Request) { r.Header.Set("Hoist-Session", name) }
}

// rpcError reads a JSON-RPC error response's code and id.
func rpcError(t *testing.T, body string) (code int, id string) {
	t.Helper()
	var r struct {
		ID    json.RawMessage `json:"id"`
		Error *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &r); err != nil || r.Error == nil {
		t.Fatalf("not a JSON-RPC error: %s", body)
	}
	return r.Error.Code, string(r.ID)
}

// TestListenStateless serves hosts of the stateless era (2026-07-28) over
// --listen: no session id is demanded or given, each request's headers are
// checked against its body with that era's error codes, and a hoist session
// (server and log) is keyed by the Hoist-Session header. A session-era host
// is served by the same proxy at the same time. (A server/discover used to
// get 400, "missing Mcp-Session-Id".)
func TestListenStateless(t *testing.T) {
	dir := t.TempDir()
	cmd, env := fake("modern")
	l := startListenWith(t, env, append([]string{"--record", dir, "--"}, cmd...)...)

	r := l.do("POST", modernDiscover, both(modernHeaders("server/discover", ""), hoistSession("hs-1")))
	if r.status != 200 || !strings.Contains(r.body, `"supportedVersions":["2026-07-28"]`) || r.header.Get("Mcp-Session-Id") != "" {
		t.Fatalf("server/discover: %d %v %s", r.status, r.header, r.body)
	}
	call := modernCall("2", `{"text":"a"}`, "")
	if r := l.do("POST", call, both(modernHeaders("tools/call", "lookup"), hoistSession("hs-1"))); r.status != 200 || !strings.Contains(r.body, `"id":2,`) || !strings.Contains(r.body, `\"text\":\"a\"`) {
		t.Errorf("tools/call: %d %s", r.status, r.body)
	}
	b64 := "=?base64?" + base64.StdEncoding.EncodeToString([]byte("lookup")) + "?="
	if r := l.do("POST", call, both(modernHeaders("tools/call", b64), hoistSession("hs-2"))); r.status != 200 {
		t.Errorf("tools/call with Mcp-Name in base64: %d %s", r.status, r.body)
	}
	for _, tc := range []struct {
		name string
		body string
		mod  func(*http.Request)
		code int
	}{
		{"no version header", call, func(r *http.Request) { modernHeaders("tools/call", "lookup")(r); r.Header.Del("Mcp-Protocol-Version") }, -32020},
		{"versions differ", call, func(r *http.Request) {
			modernHeaders("tools/call", "lookup")(r)
			r.Header.Set("Mcp-Protocol-Version", "2027-01-01")
		}, -32020},
		{"no _meta version", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"lookup","arguments":{}}}`, modernHeaders("tools/call", "lookup"), -32602},
		{"no Mcp-Method", call, func(r *http.Request) { modernHeaders("tools/call", "lookup")(r); r.Header.Del("Mcp-Method") }, -32020},
		{"other Mcp-Method", call, modernHeaders("tools/list", "lookup"), -32020},
		{"no Mcp-Name", call, modernHeaders("tools/call", ""), -32020},
		{"other Mcp-Name", call, modernHeaders("tools/call", "update"), -32020},
		{"Mcp-Name not base64", call, modernHeaders("tools/call", "=?base64?***?="), -32020},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := l.do("POST", tc.body, both(tc.mod, hoistSession("hs-1")))
			if r.status != 400 {
				t.Fatalf("status %d, want 400: %s", r.status, r.body)
			}
			if code, id := rpcError(t, r.body); code != tc.code || id != "2" {
				t.Errorf("error %d for id %s, want %d for 2: %s", code, id, tc.code, r.body)
			}
		})
	}
	// A request of neither era, without a session: 400 as before.
	if r := l.do("POST", `{"jsonrpc":"2.0","id":5,"method":"tools/list"}`, nil); r.status != 400 || !strings.Contains(r.body, "missing Mcp-Session-Id") {
		t.Errorf("a session-era request without a session: %d %s", r.status, r.body)
	}
	// The session era at the same time, on the same proxy.
	sid := l.initialize(nil)
	if r := l.do("POST", `{"jsonrpc":"2.0","id":6,"method":"tools/list"}`, session(sid)); r.status != 200 {
		t.Errorf("a session-era request beside stateless ones: %d %s", r.status, r.body)
	}

	l.cmd.Process.Signal(syscall.SIGTERM)
	if code := l.wait(); code != 0 {
		t.Errorf("exit %d after SIGTERM; stderr:\n%s", code, l.stderr)
	}
	paths, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	hosts := map[string]int{}
	for _, path := range paths {
		data, _ := os.ReadFile(path)
		var h struct {
			HostSession string `json:"host_session"`
		}
		json.Unmarshal([]byte(strings.SplitN(string(data), "\n", 2)[0]), &h)
		hosts[h.HostSession]++
	}
	if len(paths) != 3 || hosts["hs-1"] != 1 || hosts["hs-2"] != 1 {
		t.Errorf("logs by host session %v, want one for hs-1, one for hs-2 and the session-era one", hosts)
	}
}

// TestListenStatelessConnection: a stateless-era host that names no hoist
// session is one per connection, and its connection's closing ends it.
func TestListenStatelessConnection(t *testing.T) {
	cmd, env := fake("modern")
	l := startListenWith(t, env, cmd...)
	c := &http.Client{Transport: &http.Transport{}}
	for id := range 3 {
		req, _ := http.NewRequest("POST", l.url, strings.NewReader(modernCall(itoa(id), `{"text":"a"}`, "")))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		modernHeaders("tools/call", "lookup")(req)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if n := strings.Count(l.stderr.String(), "ended"); n != 0 {
		t.Errorf("a session ended while its connection was open:\n%s", l.stderr)
	}
	c.CloseIdleConnections()
	waitFor(t, "the connection's session to end", func() bool {
		return strings.Contains(l.stderr.String(), "ended: the host closed its connection")
	})
	l.cmd.Process.Signal(syscall.SIGTERM)
	l.wait()
	if n := strings.Count(l.stderr.String(), "ended:"); n != 1 {
		t.Errorf("%d sessions ended, want the one of the connection:\n%s", n, l.stderr)
	}
}

// TestListenStatelessAnswers checks how a stateless-era request is
// answered: an error the era gives a status of its own with that status
// (404 for an unknown method, 400 for an unsupported version, its data
// kept); a call whose server sends progress first, as an event stream with
// the progress on the call's own stream.
func TestListenStatelessAnswers(t *testing.T) {
	cmd, env := fake("modern")
	l := startListenWith(t, env, cmd...)
	post := func(id, args, extra string) httpResult {
		return l.do("POST", modernCall(id, args, extra), both(modernHeaders("tools/call", "lookup"), hoistSession("h")))
	}
	for _, tc := range []struct {
		code, status int
	}{{-32601, 404}, {-32022, 400}, {-32021, 400}, {-32602, 400}, {-32000, 200}} {
		r := post("7", `{"code":`+itoa(tc.code)+`}`, "")
		if r.status != tc.status || r.header.Get("Content-Type") != "application/json" {
			t.Errorf("error %d: status %d %s, want %d", tc.code, r.status, r.header.Get("Content-Type"), tc.status)
		}
		if code, _ := rpcError(t, r.body); code != tc.code {
			t.Errorf("error %d relayed as %d", tc.code, code)
		}
	}
	if r := post("7", `{"code":-32022}`, ""); !strings.Contains(r.body, `"supported":["2026-07-28"]`) {
		t.Errorf("the unsupported version's data is lost: %s", r.body)
	}
	withToken := strings.Replace(modernMeta, `"_meta":{`, `"_meta":{"progressToken":"p-8",`, 1)
	r := l.do("POST", `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"lookup","arguments":{"progress":true},`+withToken+`}}`,
		both(modernHeaders("tools/call", "lookup"), hoistSession("h")))
	if r.status != 200 || r.header.Get("Content-Type") != "text/event-stream" ||
		!strings.Contains(r.body, `"method":"notifications/progress","params":{"progress":1,"progressToken":"p-8"}`) || !strings.Contains(r.body, `"id":8,`) {
		t.Errorf("a call with progress: %d %s\n%s", r.status, r.header.Get("Content-Type"), r.body)
	}
	l.cmd.Process.Signal(syscall.SIGTERM)
	l.wait()
}

// TestListenStatelessCancel: a stateless-era host that closes a request's
// stream cancels it (2026-07-28 transports/streamable-http,
// "Cancellation"): the server over stdio gets a notifications/cancelled for
// it, which the log keeps as the proxy's.
func TestListenStatelessCancel(t *testing.T) {
	dir := t.TempDir()
	tee := filepath.Join(t.TempDir(), "server-stdin")
	cmd, env := fake("modern", "HOIST_FAKE_TEE="+tee)
	l := startListenWith(t, env, append([]string{"--record", dir, "--"}, cmd...)...)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", l.url, strings.NewReader(modernCall(`"slow-1"`, `{"hang":true}`, "")))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	modernHeaders("tools/call", "lookup")(req)
	hoistSession("h")(req)
	done := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	read := func() string { b, _ := os.ReadFile(tee); return string(b) }
	waitFor(t, "the server to read the call", func() bool { return strings.Contains(read(), `"id":"slow-1"`) })
	cancel()
	<-done
	waitFor(t, "the server to read the cancellation", func() bool {
		return strings.Contains(read(), `"method":"notifications/cancelled","params":{"requestId":"slow-1"`)
	})
	l.cmd.Process.Signal(syscall.SIGTERM)
	l.wait()
	_, lines, _ := readLog(t, dir)
	var logged bool
	for _, ln := range lines {
		if ln.From == "proxy" && strings.Contains(string(ln.Message), `"notifications/cancelled"`) {
			logged = true
		}
	}
	if !logged {
		t.Error("the log does not keep the cancellation")
	}
}
