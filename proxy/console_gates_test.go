package proxy_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hoist-mcp/hoist/internal/testbin"
)

// The console's gates everywhere (issue 23, point 8): the server's own
// requests and notifications held, inject at a notification, the host's
// first line waiting for a console (--wait-for-attach), and --console over
// --upstream and --listen. The console is a fake that speaks the attach
// protocol (docs/console.md, "Holding a frame") as console/attach.go does, in
// front of the built hoist-mcp.

// fakeConsole is one console that proxies attach to.
type fakeConsole struct {
	t    *testing.T
	addr string
	got  chan consoleLine // lines from the proxies, every attachment's
	done chan struct{}

	mu   sync.Mutex
	outs []chan string // verdicts, by attachment
}

// consoleLine is a line a proxy sends.
type consoleLine struct {
	Type    string          `json:"type"`
	Session string          `json:"session"`
	N       int             `json:"n"`
	Point   string          `json:"point"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Frame   json.RawMessage `json:"frame"`
	Why     string          `json:"why"`
	Digest  string          `json:"digest"`
	// from is the attachment it came on, which its verdict goes to.
	from int
}

// startFakeConsole starts a console whose breakpoints are bp (a
// breakpoints line); an attach waits until gate is closed (nil: at once).
func startFakeConsole(t *testing.T, bp string, gate chan struct{}) *fakeConsole {
	t.Helper()
	fc := &fakeConsole{t: t, got: make(chan consoleLine, 64), done: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/hold/attach" || r.Method != http.MethodPost {
			http.NotFound(w, r)
			return
		}
		if gate != nil {
			select {
			case <-gate:
			case <-fc.done:
				return
			}
		}
		rc := http.NewResponseController(w)
		if err := rc.EnableFullDuplex(); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/jsonl")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, bp+"\n")
		rc.Flush()
		out := make(chan string)
		fc.mu.Lock()
		from := len(fc.outs)
		fc.outs = append(fc.outs, out)
		fc.mu.Unlock()
		go func() {
			sc := bufio.NewScanner(r.Body)
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				var m consoleLine
				if json.Unmarshal(sc.Bytes(), &m) != nil {
					continue
				}
				m.from = from
				select {
				case fc.got <- m:
				case <-fc.done:
					return
				}
			}
		}()
		for {
			select {
			case l := <-out:
				io.WriteString(w, l+"\n")
				rc.Flush()
			case <-r.Context().Done():
				return
			case <-fc.done:
				return
			}
		}
	}))
	fc.addr = strings.TrimPrefix(srv.URL, "http://")
	t.Cleanup(func() {
		close(fc.done)
		srv.CloseClientConnections()
		srv.Close()
	})
	return fc
}

// next returns the next line of type typ a proxy sent, skipping others.
func (fc *fakeConsole) next(typ string) consoleLine {
	fc.t.Helper()
	guard := time.NewTimer(time.Minute) // a failure's bound, not a wait
	defer guard.Stop()
	for {
		select {
		case m := <-fc.got:
			if m.Type == typ {
				return m
			}
		case <-guard.C:
			fc.t.Fatalf("no %s line came from the proxy", typ)
		}
	}
}

// held returns the next held frame, which must be method's held at point.
func (fc *fakeConsole) held(method, point string) consoleLine {
	fc.t.Helper()
	h := fc.next("held")
	if h.Method != method || h.Point != point {
		fc.t.Fatalf("held %s %s (%s), want %s %s", h.Point, h.Method, h.Frame, point, method)
	}
	return h
}

// verdict sends a person's action on held frame h, to the proxy that
// holds it.
func (fc *fakeConsole) verdict(h consoleLine, action, value string) {
	fc.verdictOf(h, action, value, h.Digest)
}

// verdictOf sends a verdict on held frame h that names digest, which a
// console takes from the held frame.
func (fc *fakeConsole) verdictOf(h consoleLine, action, value, digest string) {
	v := map[string]any{"type": "verdict", "n": h.N, "action": action, "digest": digest}
	if value != "" {
		v["value"] = json.RawMessage(value)
	}
	b, _ := json.Marshal(v)
	fc.mu.Lock()
	out := fc.outs[h.from]
	fc.mu.Unlock()
	select {
	case out <- string(b):
	case <-fc.done:
	}
}

// TestConsoleHoldsServerRequests: the server's notification and its
// sampling request to the host are held before the host sees them; an
// object injected at the notification is its new params; a value
// injected at the request answers the server, and the host never sees the
// request. On the second call the request goes on, and the host's answer
// to it is held in turn before the server sees it.
func TestConsoleHoldsServerRequests(t *testing.T) {
	fc := startFakeConsole(t, `{"type":"breakpoints","methods":["sampling/createMessage","notifications/message"]}`, nil)
	cmd, env := fake("asks")
	p := startProxy(t, env, append([]string{"--console", fc.addr, "--wait-for-attach", "--"}, cmd...)...)

	p.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write_poem","arguments":{}}}` + "\n")
	n := fc.held("notifications/message", "before")
	fc.verdict(n, "inject", `{"level":"info","data":"edited by the console"}`)
	if got, want := p.readLine(), `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"edited by the console"}}`+"\n"; got != want {
		t.Fatalf("the host got %q, want the notification with the injected params %q", got, want)
	}
	s := fc.held("sampling/createMessage", "before")
	if string(s.ID) != `"srv-1"` {
		t.Errorf("held the server's request as id %s, want \"srv-1\"", s.ID)
	}
	fc.verdict(s, "inject", `"a poem from the console"`)
	if got := p.readLine(); !strings.Contains(got, `"id":1,`) || !strings.Contains(got, `a poem from the console`) {
		t.Fatalf("the host got %q, want the server's answer to call 1, made of the console's sampling answer", got)
	}

	p.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"write_poem","arguments":{}}}` + "\n")
	fc.verdict(fc.held("notifications/message", "before"), "continue", "")
	if got := p.readLine(); !strings.Contains(got, `"writing a poem"`) {
		t.Fatalf("continue: the host got %q", got)
	}
	fc.verdict(fc.held("sampling/createMessage", "before"), "continue", "")
	if got := p.readLine(); !strings.Contains(got, `"method":"sampling/createMessage"`) || !strings.Contains(got, `"srv-2"`) {
		t.Fatalf("continue: the host got %q, want the server's request", got)
	}
	p.send(`{"jsonrpc":"2.0","id":"srv-2","result":{"role":"assistant","model":"m","content":{"type":"text","text":"the host's poem"}}}` + "\n")
	a := fc.held("sampling/createMessage", "after")
	if !strings.Contains(string(a.Frame), "the host's poem") {
		t.Errorf("held the host's answer as %s", a.Frame)
	}
	fc.verdict(a, "inject", `"the console's poem"`)
	if got := p.readLine(); !strings.Contains(got, `"id":2,`) || !strings.Contains(got, `the console's poem`) || strings.Contains(got, "the host's poem") {
		t.Fatalf("the host got %q, want call 2 answered with the console's sampling answer in the host's place", got)
	}
	if rest, code := p.finish(); rest != "" || code != 0 {
		t.Fatalf("after the calls: %q, exit %d", rest, code)
	}
}

// TestWaitForAttach: the host's first line (initialize) is sent before any
// console is there; with --wait-for-attach it waits, and the console that
// attaches after holds it at its breakpoint.
func TestWaitForAttach(t *testing.T) {
	gate := make(chan struct{})
	fc := startFakeConsole(t, `{"type":"breakpoints","methods":["initialize"]}`, gate)
	cmd, env := fake("answer")
	p := startProxy(t, env, append([]string{"--console", fc.addr, "--wait-for-attach", "--"}, cmd...)...)
	p.send(init16(1))
	close(gate) // the console attaches only now
	fc.verdict(fc.held("initialize", "before"), "continue", "")
	fc.verdict(fc.held("initialize", "after"), "continue", "") // its answer, since a breakpoint held the request
	if got := p.readLine(); !strings.Contains(got, `"id":1,"result":{"pid":`) {
		t.Fatalf("the host got %q, want the server's answer to initialize", got)
	}
	if rest, code := p.finish(); rest != "" || code != 0 {
		t.Fatalf("%q, exit %d", rest, code)
	}
	if said := p.stderr.String(); !strings.Contains(said, "waiting for a console to attach at "+fc.addr) {
		t.Errorf("the proxy did not say it was waiting:\n%s", said)
	}
}

// TestConsoleOverUpstream: --console with --upstream holds a call of the
// Streamable HTTP server's tool, and an inject answers the host.
func TestConsoleOverUpstream(t *testing.T) {
	fc := startFakeConsole(t, `{"type":"breakpoints","tools":["lookup"]}`, nil)
	p := startProxy(t, nil, "--console", fc.addr, "--wait-for-attach", "--upstream", startDemoHTTP(t))
	p.send(init16(1))
	if l := p.readLine(); !strings.Contains(l, `"serverInfo"`) {
		t.Fatalf("initialize answer: %s", l)
	}
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
	p.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"lookup","arguments":{"text":"hi"}}}` + "\n")
	fc.verdict(fc.held("tools/call", "before"), "inject", `"from the console"`)
	if got, want := p.readLine(), `{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"from the console"}]}}`+"\n"; got != want {
		t.Fatalf("the host got %q, want %q", got, want)
	}
	p.finish()
}

// TestConsoleOverListen: with --listen each session attaches on its own
// (two sessions, two hellos of two session names), and a call held in one
// session is answered on its POST by the console's inject.
func TestConsoleOverListen(t *testing.T) {
	fc := startFakeConsole(t, `{"type":"breakpoints","tools":["lookup"]}`, nil)
	l := startListen(t, "--console", fc.addr, "--wait-for-attach", "--", testbin.Build(t, "hoist-mcp-demo"))
	first := l.initialize(nil)
	second := l.initialize(nil)
	if a, b := fc.next("hello"), fc.next("hello"); a.Session == "" || a.Session == b.Session {
		t.Fatalf("two sessions said hello as %q and %q: want one attachment each", a.Session, b.Session)
	}
	answer := make(chan httpResult, 1)
	go func() {
		answer <- l.do("POST", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"lookup","arguments":{"text":"hi"}}}`, session(second))
	}()
	fc.verdict(fc.held("tools/call", "before"), "inject", `"from the console"`)
	r := <-answer
	if r.status != 200 || !strings.Contains(r.body, `{"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"from the console"}]}}`) {
		t.Fatalf("the held call's POST: %d %s", r.status, r.body)
	}
	l.do("DELETE", "", session(first))
	l.do("DELETE", "", session(second))
}

// TestConsoleVerdictBoundToTheFrame: a console's verdict releases only the
// frame whose digest it names. A continue naming another frame's digest,
// or none, leaves the call unsent and holds it again; the abort that names
// the frame answers the host, and the shop's journal shows that no call
// reached it.
func TestConsoleVerdictBoundToTheFrame(t *testing.T) {
	fc := startFakeConsole(t, `{"type":"breakpoints","tools":["cancel_pending_order"]}`, nil)
	server, journal := shop(t)
	p := startProxy(t, nil, append([]string{"--console", fc.addr, "--wait-for-attach", "--"}, server...)...)
	p.send(init16(1))
	p.readLine()
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n", toolCall(3, "cancel_pending_order", `{"order_id":"#W7a","reason":"no longer needed"}`))
	h := fc.held("tools/call", "before")
	if !strings.HasPrefix(h.Digest, "sha256:") {
		t.Fatalf("the held frame names no digest: %+v", h)
	}
	other := "sha256:" + strings.Repeat("0", 64)
	fc.verdictOf(h, "continue", "", other)
	again := fc.held("tools/call", "before")
	if again.N == h.N || again.Digest != h.Digest || string(again.Frame) != string(h.Frame) {
		t.Fatalf("after a verdict for another frame: %+v", again)
	}
	fc.verdictOf(again, "continue", "", "")
	last := fc.held("tools/call", "before")
	fc.verdict(last, "abort", "")
	if got := p.readLine(); !strings.Contains(got, `"id":3`) || !strings.Contains(got, `"error"`) {
		t.Fatalf("the host got %s: want the abort's error", got)
	}
	p.finish()
	if got := servedCalls(t, journal); len(got) != 0 {
		t.Errorf("the shop served %q: a verdict for another frame released it", got)
	}
	if !strings.Contains(p.stderr.String(), "it does not release tools/call id=3, which is held again") {
		t.Errorf("stderr:\n%s", p.stderr)
	}
}
