package proxy_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// seen is what a test's HTTP server saw of one request.
type seen struct {
	method string
	header http.Header
	body   string
}

// recorder keeps what a test's HTTP server saw.
type recorder struct {
	mu   sync.Mutex
	reqs []seen
}

func (rc *recorder) add(r *http.Request) string {
	b, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.reqs = append(rc.reqs, seen{r.Method, r.Header.Clone(), string(b)})
	return string(b)
}

func (rc *recorder) all() []seen {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]seen(nil), rc.reqs...)
}

func sse(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
}

func event(w http.ResponseWriter, s string) {
	io.WriteString(w, s)
	w.(http.Flusher).Flush()
}

// TestUpstreamModern proxies a stdio host of the stateless era (2026-07-28)
// to a server of that era over --upstream: each request goes with its own
// version, method and name headers and no session, a tools/call with the
// arguments its tool marks with x-mcp-header; the server's errors in
// HTTP error bodies reach the host as JSON-RPC errors (their data kept); a
// cancelled request's stream is closed, the era's way over HTTP, rather than
// the notification sent; and there is no GET stream and no DELETE.
func TestUpstreamModern(t *testing.T) {
	rc := &recorder{}
	closed := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := rc.add(r)
		if r.Method != http.MethodPost {
			http.Error(w, "no", http.StatusMethodNotAllowed)
			return
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		json.Unmarshal([]byte(body), &req)
		switch {
		case req.ID == nil:
			w.WriteHeader(http.StatusAccepted)
		case req.Method == "tools/list":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"resultType":"complete","tools":[{"name":"lookup","inputSchema":{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}}]}}`, req.ID)
		case req.Method == "server/discover":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{}}}`, req.ID)
		case strings.Contains(body, `"hang"`):
			sse(w)
			<-r.Context().Done()
			close(closed)
		case strings.Contains(body, `"noid"`):
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"jsonrpc":"2.0","error":{"code":-32020,"message":"header mismatch"}}`)
		default:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32022,"message":"Unsupported protocol version","data":{"supported":["2026-07-28"]}}}`, req.ID)
		}
	}))
	defer srv.Close()
	dir := t.TempDir()
	p := startProxy(t, nil, "--record", dir, "--upstream", srv.URL+"/mcp")
	p.send(modernDiscover + "\n")
	if l := p.readLine(); !strings.Contains(l, `"supportedVersions":["2026-07-28"]`) {
		t.Fatalf("server/discover: %s", l)
	}
	p.send(`{"jsonrpc":"2.0","id":"l","method":"tools/list","params":{` + modernMeta + `}}` + "\n")
	p.readLine()
	p.send(modernCall("2", `{"region":"東京"}`, "") + "\n")
	if l := p.readLine(); !strings.Contains(l, `"id":2,"error":{"code":-32022,"message":"Unsupported protocol version","data":{"supported":["2026-07-28"]}}`) {
		t.Errorf("an unsupported version: %s", l)
	}
	p.send(modernCall(`"n"`, `{"noid":true}`, "") + "\n")
	if l := p.readLine(); !strings.Contains(l, `{"jsonrpc":"2.0","id":"n","error":{"code":-32020,"message":"header mismatch"}}`) {
		t.Errorf("an error without the request's id: %s", l)
	}
	p.send(modernCall("3", `{"hang":true}`, "") + "\n")
	waitFor(t, "the server to get the call", func() bool {
		for _, s := range rc.all() {
			if strings.Contains(s.body, `"hang"`) {
				return true
			}
		}
		return false
	})
	p.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3,"reason":"user"}}` + "\n")
	waitFor(t, "the cancelled request's stream to close", func() bool {
		select {
		case <-closed:
			return true
		default:
			return false
		}
	})
	if rest, code := p.finish(); code != 0 || rest != "" {
		t.Errorf("exit %d, more output %q (a cancelled request gets no answer); stderr:\n%s", code, rest, p.stderr)
	}
	for i, s := range rc.all() {
		if s.method != http.MethodPost {
			t.Errorf("request %d: %s; the stateless era has no GET stream and no DELETE", i, s.method)
			continue
		}
		if strings.Contains(s.body, "notifications/cancelled") {
			t.Errorf("the cancellation was POSTed: %s", s.body)
		}
		var m struct {
			Method string `json:"method"`
		}
		json.Unmarshal([]byte(s.body), &m)
		h := s.header
		if h.Get("Mcp-Protocol-Version") != "2026-07-28" || h.Get("Mcp-Method") != m.Method || h.Get("Mcp-Session-Id") != "" {
			t.Errorf("request %d (%s): version %q, method %q, session %q", i, m.Method, h.Get("Mcp-Protocol-Version"), h.Get("Mcp-Method"), h.Get("Mcp-Session-Id"))
		}
		if want := map[string]string{"tools/call": "lookup"}[m.Method]; h.Get("Mcp-Name") != want {
			t.Errorf("request %d (%s): Mcp-Name %q, want %q", i, m.Method, h.Get("Mcp-Name"), want)
		}
		// The argument its tool marks with x-mcp-header, in base64 as it
		// is not ASCII.
		if strings.Contains(s.body, `"region"`) && h.Get("Mcp-Param-Region") != "=?base64?5p2x5Lqs?=" {
			t.Errorf("request %d: Mcp-Param-Region %q, want the region in base64", i, h.Get("Mcp-Param-Region"))
		}
	}
}

// TestUpstreamResumesStream: a session-era server that cuts a request's
// event stream short after naming an event id and a retry time is resumed
// as the transport says: a GET with Last-Event-ID, again from the newest id
// when the resumed stream is cut short too, until the response comes. (The
// proxy used to answer "closed its answer without a response".)
func TestUpstreamResumesStream(t *testing.T) {
	rc := &recorder{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := rc.add(r)
		w.Header().Set("Mcp-Session-Id", "s-1")
		switch {
		case r.Method == http.MethodGet && r.Header.Get("Last-Event-ID") == "ev-1":
			sse(w)
			event(w, "id: ev-2\nretry: 20\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"t\",\"progress\":1}}\n\n")
		case r.Method == http.MethodGet && r.Header.Get("Last-Event-ID") == "ev-2":
			sse(w)
			event(w, "id: ev-3\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"resumed\"}]}}\n\n")
		case r.Method == http.MethodGet:
			http.Error(w, "no stream of its own", http.StatusMethodNotAllowed)
		case strings.Contains(body, `"initialize"`):
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"cut","version":"0"}}}`)
		case strings.Contains(body, `"tools/call"`):
			sse(w)
			event(w, "id: ev-1\nretry: 30\ndata: \n\n") // the priming event, then the cut
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	defer srv.Close()
	p := startProxy(t, nil, "--upstream", srv.URL+"/mcp")
	p.send(strings.Replace(init16(1), "2025-06-18", "2025-11-25", 1), `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	p.readLine()
	p.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{},"_meta":{"progressToken":"t"}}}` + "\n")
	got := strings.Join(p.readUntil(`"id":2`), "")
	if !strings.Contains(got, `"notifications/progress"`) || !strings.Contains(got, `"text":"resumed"`) {
		t.Errorf("the host got:\n%s", got)
	}
	p.finish()
	var resumes []string
	for _, s := range rc.all() {
		if id := s.header.Get("Last-Event-ID"); s.method == http.MethodGet && id != "" {
			resumes = append(resumes, id)
			if s.header.Get("Mcp-Session-Id") != "s-1" {
				t.Errorf("a resuming GET without the session id")
			}
		}
	}
	if strings.Join(resumes, " ") != "ev-1 ev-2" {
		t.Errorf("resumed from %q, want ev-1 then ev-2", resumes)
	}
}

// TestListenUpstreamStreams: with --listen in front of --upstream, what the
// server sends on a request's stream (its progress and its log messages)
// reaches the host on that request's stream, and what it sends on its own
// GET stream on the host's (manual, "Streams"). (The progress used to go to
// the host's GET stream.)
func TestListenUpstreamStreams(t *testing.T) {
	own := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Mcp-Session-Id", "s-1")
		switch {
		case r.Method == http.MethodGet:
			sse(w)
			select {
			case msg := <-own:
				event(w, "data: "+msg+"\n\n")
				<-r.Context().Done()
			case <-r.Context().Done():
			}
		case strings.Contains(string(body), `"initialize"`):
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"up","version":"0"}}}`)
		case strings.Contains(string(body), `"tools/call"`):
			sse(w)
			event(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"t\",\"progress\":1}}\n\n")
			event(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"working\"}}\n\n")
			event(w, "data: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"content\":[]}}\n\n")
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	defer srv.Close()
	l := startListen(t, "--upstream", srv.URL+"/mcp")
	sid := l.initialize(nil)
	l.do("POST", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, session(sid))

	req, _ := http.NewRequest("GET", l.url, nil)
	req.Header.Set("Accept", "text/event-stream")
	session(sid)(req)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("the host's GET stream: %v %v", resp, err)
	}
	defer resp.Body.Close()
	r := l.do("POST", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x","arguments":{},"_meta":{"progressToken":"t"}}}`, session(sid))
	if !strings.Contains(r.body, `"notifications/progress"`) || !strings.Contains(r.body, `"notifications/message"`) || !strings.Contains(r.body, `"id":2,`) {
		t.Errorf("the call's stream:\n%s", r.body)
	}
	own <- `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, "notifications/progress") || strings.Contains(line, "notifications/message") {
			t.Errorf("the host's GET stream carried a message of the call's: %s", line)
		}
		if strings.Contains(line, "list_changed") {
			break
		}
	}
	l.cmd.Process.Signal(syscall.SIGTERM)
	l.wait()
}
