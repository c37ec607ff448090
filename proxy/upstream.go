package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/hoist-mcp/hoist/jsonrpc"
	"github.com/hoist-mcp/hoist/mcplog"
	"github.com/hoist-mcp/hoist/mcpmsg"
)

// UpstreamProtocol is the Streamable HTTP revision --upstream speaks
// (manual, "Streamable HTTP servers").
const UpstreamProtocol = "2025-06-18"

// upstream is one MCP session with a server over Streamable HTTP, on behalf
// of one host. Host messages go to send, one at a time and in order; what
// the server sends comes back through toHost, as lines.
type upstream struct {
	url      string
	logURL   string // url without credentials, for messages
	header   http.Header
	client   *http.Client
	maxFrame int
	toHost   func(from string, line []byte)
	say      func(string, ...any)

	ctx    context.Context
	cancel context.CancelFunc

	mu         sync.Mutex
	sessionID  string
	version    string
	ended      bool
	endedSaid  bool
	getRunning bool

	inflight sync.WaitGroup
	getDone  chan struct{}
}

func newUpstream(rawURL string, header http.Header, maxFrame int, toHost func(string, []byte), say func(string, ...any)) *upstream {
	ctx, cancel := context.WithCancel(context.Background())
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	tr.MaxIdleConnsPerHost = 64
	return &upstream{
		url:      rawURL,
		logURL:   mcplog.ScrubURL(rawURL),
		header:   header,
		client:   &http.Client{Transport: tr},
		maxFrame: maxFrame,
		toHost:   toHost,
		say:      say,
		ctx:      ctx,
		cancel:   cancel,
		getDone:  make(chan struct{}),
	}
}

// send forwards one host message. The initialize request and every
// notification and response are sent before send returns, so the server
// sees them in order; other requests run concurrently, since a tool call may
// take long.
func (u *upstream) send(line []byte) {
	m := jsonrpc.Classify(line)
	if u.isEnded() {
		u.refuse(m, "the MCP server ended the session (HTTP 404); restart the host's connection to start another")
		return
	}
	if m.Kind == jsonrpc.Request && m.Method != "initialize" {
		u.inflight.Add(1)
		go func() {
			defer u.inflight.Done()
			u.post(line, m)
		}()
		return
	}
	u.post(line, m)
	if m.Kind == jsonrpc.Notification && m.Method == "notifications/initialized" {
		u.mu.Lock()
		start := !u.getRunning
		u.getRunning = true
		u.mu.Unlock()
		if start {
			go u.listen()
		}
	}
}

// close waits for the requests in flight, stops the GET stream and ends the
// session with a DELETE (manual: "When the host closes the proxy's stdin,
// the proxy waits for the requests in flight and ends the session").
func (u *upstream) close() {
	u.inflight.Wait()
	u.cancel()
	u.mu.Lock()
	running, sid, ended := u.getRunning, u.sessionID, u.ended
	u.mu.Unlock()
	if running {
		<-u.getDone
	}
	if sid == "" || ended {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, u.url, nil)
	if err != nil {
		return
	}
	u.setHeaders(req)
	resp, err := u.client.Do(req)
	if err != nil {
		u.say("ending the session with DELETE: %v", plainError(err))
		return
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
}

func (u *upstream) isEnded() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.ended
}

func (u *upstream) setHeaders(req *http.Request) {
	for k, vs := range u.header {
		req.Header[k] = vs
	}
	u.mu.Lock()
	if u.sessionID != "" {
		req.Header.Set("Mcp-Session-Id", u.sessionID)
	}
	if u.version != "" {
		req.Header.Set("Mcp-Protocol-Version", u.version)
	}
	u.mu.Unlock()
}

// post sends one message and relays what comes back.
func (u *upstream) post(line []byte, m jsonrpc.Message) {
	req, err := http.NewRequestWithContext(context.WithoutCancel(u.ctx), http.MethodPost, u.url, bytes.NewReader(line))
	if err != nil {
		u.refuse(m, fmt.Sprintf("cannot build a request to %s: %v", u.logURL, err))
		return
	}
	u.setHeaders(req)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := u.client.Do(req)
	if err != nil {
		u.refuse(m, fmt.Sprintf("cannot reach the MCP server at %s: %v", u.logURL, plainError(err)))
		return
	}
	defer resp.Body.Close()
	if m.Method == "initialize" {
		if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
			if !visibleASCII(sid) {
				u.refuse(m, "the MCP server assigned a session id that is not visible ASCII")
				return
			}
			u.mu.Lock()
			u.sessionID = sid
			u.mu.Unlock()
		}
	}
	switch code := resp.StatusCode; {
	case code == http.StatusNotFound && u.hasSession():
		u.mu.Lock()
		u.ended = true
		u.mu.Unlock()
		u.refuse(m, "the MCP server ended the session (HTTP 404); restart the host's connection to start another")
	case code == http.StatusAccepted || code == http.StatusNoContent:
		if m.Kind == jsonrpc.Request {
			u.refuse(m, fmt.Sprintf("the MCP server accepted the request without answering it (HTTP %d)", code))
		}
	case code >= 200 && code < 300:
		answered := u.relay(resp, m)
		if m.Kind == jsonrpc.Request && !answered {
			u.refuse(m, "the MCP server closed its answer without a response to this request")
		}
	default:
		excerpt, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
		msg := fmt.Sprintf("the MCP server refused the request: HTTP %d", code)
		if t := bytes.TrimSpace(excerpt); len(t) > 0 {
			msg += ": " + string(bytes.ToValidUTF8(t, []byte("?")))
		}
		u.refuse(m, msg)
	}
}

func (u *upstream) hasSession() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.sessionID != ""
}

// relay passes a 2xx answer to the host, whether it is one JSON body or an
// event stream, and reports whether it held the response to m.
func (u *upstream) relay(resp *http.Response, m jsonrpc.Message) bool {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	answered := false
	deliver := func(data []byte) {
		line := oneLine(data)
		if len(line) == 0 {
			return
		}
		got := jsonrpc.Classify(line)
		if m.Kind == jsonrpc.Request && got.Kind == jsonrpc.Response && bytes.Equal(got.ID, m.ID) {
			answered = true
			if m.Method == "initialize" {
				u.learnVersion(line)
			}
		}
		u.toHost(mcplog.FromServer, line)
	}
	if mt == "text/event-stream" {
		r := newSSEReader(resp.Body, u.maxFrame)
		for {
			ev, err := r.next()
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, context.Canceled) {
					u.say("reading the MCP server's event stream: %v", plainError(err))
				}
				return answered
			}
			if ev.Name == "" || ev.Name == "message" {
				deliver(ev.Data)
			}
		}
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, int64(u.maxFrame)+1))
	if err != nil {
		u.say("reading the MCP server's answer: %v", plainError(err))
	}
	if len(body) > u.maxFrame {
		u.say("an answer of the MCP server is longer than --max-frame-bytes (%d); dropped", u.maxFrame)
		return answered
	}
	deliver(body)
	return answered
}

// learnVersion takes the negotiated protocol version from the initialize
// result, for the MCP-Protocol-Version header of every later request.
func (u *upstream) learnVersion(line []byte) {
	m := jsonrpc.Classify(line)
	if m.Result == nil {
		return
	}
	if v := mcpmsg.ReadInitialized(m.Result).ProtocolVersion; v != "" {
		u.mu.Lock()
		u.version = v
		u.mu.Unlock()
	}
}

// refuse answers a host request the server could not, so the host never
// waits; for anything else it only tells the person watching stderr.
func (u *upstream) refuse(m jsonrpc.Message, why string) {
	if m.Kind != jsonrpc.Request {
		u.mu.Lock()
		quiet := u.ended && u.endedSaid
		if u.ended {
			u.endedSaid = true
		}
		u.mu.Unlock()
		if !quiet {
			u.say("%s", why)
		}
		return
	}
	u.toHost(mcplog.FromProxy, errorResponse(m.ID, -32000, "hoist-mcp: "+why))
}

// errorResponse builds a JSON-RPC error response for id (raw).
func errorResponse(id json.RawMessage, code int, msg string) []byte {
	return mcpmsg.AppendError(nil, id, code, msg)
}

// listen keeps the GET stream open for the messages the server sends on its
// own, and opens it again when it drops, until the session ends.
func (u *upstream) listen() {
	defer close(u.getDone)
	backoff := 250 * time.Millisecond
	for u.ctx.Err() == nil && !u.isEnded() {
		req, err := http.NewRequestWithContext(u.ctx, http.MethodGet, u.url, nil)
		if err != nil {
			return
		}
		u.setHeaders(req)
		req.Header.Set("Accept", "text/event-stream")
		resp, err := u.client.Do(req)
		if err != nil {
			if !u.wait(backoff) {
				return
			}
			backoff = min(2*backoff, 10*time.Second)
			continue
		}
		mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
		switch {
		case resp.StatusCode == http.StatusNotFound && u.hasSession():
			resp.Body.Close()
			u.mu.Lock()
			u.ended = true
			u.mu.Unlock()
			return
		case resp.StatusCode == http.StatusOK && mt == "text/event-stream":
			backoff = 250 * time.Millisecond
			r := newSSEReader(resp.Body, u.maxFrame)
			for {
				ev, err := r.next()
				if err != nil {
					break
				}
				if ev.Retry != "" {
					if ms, err := strconv.Atoi(ev.Retry); err == nil && ms > 0 {
						backoff = time.Duration(ms) * time.Millisecond
					}
				}
				if ev.Name == "" || ev.Name == "message" {
					if line := oneLine(ev.Data); len(line) > 0 {
						u.toHost(mcplog.FromServer, line)
					}
				}
			}
			resp.Body.Close()
		case resp.StatusCode >= 400 && resp.StatusCode < 500:
			// 405: the server offers no stream of its own; other 4xx will
			// not get better by asking again.
			resp.Body.Close()
			return
		default:
			resp.Body.Close()
			backoff = min(2*backoff, 10*time.Second)
		}
		if !u.wait(backoff) {
			return
		}
	}
}

// wait sleeps for d unless the session is closing; it reports whether to go
// on.
func (u *upstream) wait(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-u.ctx.Done():
		return false
	}
}

// plainError drops the URL an *url.Error carries, which may hold
// credentials, and keeps what went wrong.
func plainError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

func visibleASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return s != ""
}
