package proxy_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hoist-mcp/hoist/proxy"
)

// Issue 23, point 7: every way a session ends ends what it started. These
// tests run the proxy in this process, so that goleak sees its goroutines:
// each checks that none outlives the session (or the listener), against a
// snapshot taken first, since other tests run beside them.

// listenInProcess runs proxy.RunListen in front of the fake server mode
// (fakeserver_test.go) and returns its URL and a stop that cancels it (as
// SIGTERM does) and returns its exit code.
func listenInProcess(t *testing.T, mode string, idle time.Duration, o proxy.Options) (url string, stop func() int, said *watchWriter) {
	t.Helper()
	t.Setenv("HOIST_FAKE_SERVER", mode)
	o.Command = []string{os.Args[0]}
	if o.StopGrace == 0 {
		o.StopGrace = 200 * time.Millisecond
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	code := make(chan int, 1)
	said = &watchWriter{chunks: make(chan string, 1024)}
	go func() {
		code <- proxy.RunListen(ctx, o, proxy.ListenOptions{Addr: "127.0.0.1:0", Idle: idle, Ready: func(u string) { ready <- u }},
			proxy.Streams{Out: io.Discard, Err: said})
	}()
	select {
	case url = <-ready:
	case c := <-code:
		cancel()
		t.Fatalf("RunListen exited with %d", c)
	}
	stopped := false
	stop = func() int {
		if stopped {
			return 0
		}
		stopped = true
		cancel()
		return <-code
	}
	t.Cleanup(func() { stop() })
	return url, stop, said
}

// watchWriter is the proxy's stderr, which a test waits on for a message.
type watchWriter struct {
	chunks chan string
	seen   string
}

func (w *watchWriter) Write(p []byte) (int, error) {
	select {
	case w.chunks <- string(p):
	default: // a test that waits for nothing more
	}
	return len(p), nil
}

// waitFor returns once the proxy has said text.
func (w *watchWriter) waitFor(text string) {
	for !strings.Contains(w.seen, text) {
		w.seen += <-w.chunks
	}
}

// leaks are goleak's options for these tests: the goroutine that starts
// every server lives as long as the process, by design (child_linux.go).
func leaks(ignore goleak.Option) []goleak.Option {
	return []goleak.Option{ignore, goleak.IgnoreTopFunction("github.com/hoist-mcp/hoist/proxy.spawner")}
}

// client is an HTTP client of the test's own, whose connections it closes.
type client struct {
	t   *testing.T
	c   *http.Client
	url string
}

func newClient(t *testing.T, url string) *client {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &client{t: t, c: &http.Client{Transport: tr}, url: url}
}

// do sends one request in session sid ("" for none) and returns the
// status and the body.
func (c *client) do(method, sid, body string) (int, string, http.Header) {
	c.t.Helper()
	req, _ := http.NewRequest(method, c.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	resp, err := c.c.Do(req)
	if err != nil {
		c.t.Fatalf("%s: %v", method, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

func (c *client) open() string {
	c.t.Helper()
	status, body, h := c.do("POST", "", strings.TrimSpace(init16(1)))
	sid := h.Get("Mcp-Session-Id")
	if status != 200 || sid == "" {
		c.t.Fatalf("initialize: %d %s", status, body)
	}
	return sid
}

// TestListenDeleteDeafServer: a DELETE ends a session whose server stopped
// reading its stdin while a request was being written to it: the DELETE
// returns, the request is answered with an error, the slot is free again
// (a new session opens), and nothing of the session is left running.
func TestListenDeleteDeafServer(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	url, stop, said := listenInProcess(t, "deaf", time.Hour, proxy.Options{})
	c := newClient(t, url)
	sid := c.open()
	// More than the pipe holds: the write waits for a reader that never
	// comes.
	big := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"lookup","arguments":{"text":"` + strings.Repeat("y", 3<<20) + `"}}}`
	answered := make(chan string, 1)
	go func() {
		_, body, _ := c.do("POST", sid, big)
		answered <- body
	}()
	said.waitFor("deaf: a line has begun")
	if status, body, _ := c.do("DELETE", sid, ""); status != http.StatusNoContent {
		t.Fatalf("DELETE: %d %s", status, body)
	}
	if body := <-answered; !strings.Contains(body, `"error"`) || !strings.Contains(body, `"id":2`) {
		t.Errorf("the request the server never read got %q, want a JSON-RPC error for id 2", body)
	}
	if status, body, _ := c.do("POST", sid, `{"jsonrpc":"2.0","id":3,"method":"ping"}`); status != http.StatusNotFound {
		t.Errorf("the ended session answered %d %s, want 404", status, body)
	}
	c.open() // the slot is free
	if code := stop(); code != 0 {
		t.Errorf("exit %d", code)
	}
	c.c.CloseIdleConnections()
	goleak.VerifyNone(t, leaks(ignore)...)
}

// TestListenServerLineTooLong: a server answer past --max-frame-bytes
// cannot go to the host; the request it answers gets a JSON-RPC error that
// says so, and the session goes on.
func TestListenServerLineTooLong(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Setenv("HOIST_FAKE_BIG", "20000")
	url, stop, _ := listenInProcess(t, "big", time.Hour, proxy.Options{MaxFrameBytes: 8192})
	c := newClient(t, url)
	status, body, h := c.do("POST", "", strings.TrimSpace(init16(1)))
	sid := h.Get("Mcp-Session-Id")
	if sid == "" || status != 200 {
		t.Fatalf("initialize: %d %s", status, body)
	}
	var m struct {
		ID    json.RawMessage `json:"id"`
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &m); err != nil || string(m.ID) != "1" || m.Error == nil ||
		!strings.Contains(m.Error.Message, "MCP server's answer is longer than --max-frame-bytes (8192 bytes)") {
		t.Errorf("the over-long answer to initialize became %s", body)
	}
	if status, _, _ := c.do("DELETE", sid, ""); status != http.StatusNoContent {
		t.Errorf("DELETE: %d", status)
	}
	if code := stop(); code != 0 {
		t.Errorf("exit %d", code)
	}
	c.c.CloseIdleConnections()
	goleak.VerifyNone(t, leaks(ignore)...)
}

// TestListenSessionEndsLeakNothing: a session ended by --listen-idle, by
// its server's exit, and by the listener's own stop (SIGTERM) leaves
// nothing running.
func TestListenSessionEndsLeakNothing(t *testing.T) {
	t.Run("idle", func(t *testing.T) {
		ignore := goleak.IgnoreCurrent()
		url, stop, said := listenInProcess(t, "answer", 50*time.Millisecond, proxy.Options{})
		c := newClient(t, url)
		sid := c.open()
		said.waitFor("session " + sid[:8] + " ended: idle")
		if status, _, _ := c.do("POST", sid, `{"jsonrpc":"2.0","id":2,"method":"ping"}`); status != http.StatusNotFound {
			t.Errorf("the idle session answered %d, want 404", status)
		}
		c.open() // ended by the listener's stop
		if code := stop(); code != 0 {
			t.Errorf("exit %d", code)
		}
		c.c.CloseIdleConnections()
		goleak.VerifyNone(t, leaks(ignore)...)
	})
	t.Run("server exit", func(t *testing.T) {
		ignore := goleak.IgnoreCurrent()
		url, stop, said := listenInProcess(t, "exit", time.Hour, proxy.Options{})
		c := newClient(t, url)
		sid := c.open()
		said.waitFor("session " + sid[:8] + " ended: the MCP server exited")
		if code := stop(); code != 0 {
			t.Errorf("exit %d", code)
		}
		c.c.CloseIdleConnections()
		goleak.VerifyNone(t, leaks(ignore)...)
	})
}

// TestStdioSessionEndsLeakNothing: a stdio session in active mode ended by
// the host closing stdin, by its server's exit, and by the proxy's own stop
// (SIGTERM cancels the context) leaves nothing running.
func TestStdioSessionEndsLeakNothing(t *testing.T) {
	for _, tc := range []struct{ name, mode string }{{"host close", "answer"}, {"server exit", "exit"}, {"stop", "answer"}} {
		t.Run(tc.name, func(t *testing.T) {
			ignore := goleak.IgnoreCurrent()
			t.Setenv("HOIST_FAKE_SERVER", tc.mode)
			hostR, hostW := io.Pipe()
			outR, outW := io.Pipe()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			o := proxy.Options{Command: []string{os.Args[0]}, StopGrace: 10 * time.Second, Commit: true,
				Guards: &proxy.GuardsOptions{Domain: "retail"}}
			code := make(chan int, 1)
			go func() {
				code <- proxy.RunStdio(ctx, o, proxy.Streams{In: hostR, Out: outW, Err: io.Discard})
				outW.Close()
			}()
			go io.WriteString(hostW, init16(1))
			out := make(chan string, 16)
			go func() {
				defer close(out)
				b := make([]byte, 64<<10)
				for {
					n, err := outR.Read(b)
					if n > 0 {
						out <- string(b[:n])
					}
					if err != nil {
						return
					}
				}
			}()
			if first := <-out; !strings.Contains(first, `"id":1`) {
				t.Fatalf("initialize got %q", first)
			}
			switch tc.name {
			case "host close":
				hostW.Close()
			case "stop":
				cancel()
			} // "server exit": it exits after its first answer
			if c := <-code; c != 0 {
				t.Errorf("exit %d", c)
			}
			hostW.Close() // the proxy's reader of stdin may wait in Read until then
			for range out {
			}
			goleak.VerifyNone(t, leaks(ignore)...)
		})
	}
}
