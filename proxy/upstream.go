package proxy

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/hoist-mcp/hoist/jsonrpc"
	"github.com/hoist-mcp/hoist/mcplog"
	"github.com/hoist-mcp/hoist/mcpmsg"
)

// UpstreamProtocol is the session-era Streamable HTTP revision --upstream
// speaks to a server that a host opens a session with (manual, "Streamable
// HTTP servers"): its session id, its version header, its GET stream and
// resuming a stream cut short. A host of the stateless era (2026-07-28) is
// served with that revision's rules instead, request by request.
const UpstreamProtocol = "2025-11-25"

// Resuming a session-era stream cut short: how often, and how long to wait
// when the server gave no retry field (go-sdk's client tries five times).
const (
	maxResumes    = 5
	resumeBackoff = 500 * time.Millisecond
)

// upstream is one MCP server over Streamable HTTP, on behalf of one host.
// Host messages go to send, one at a time and in order; what the server
// sends comes back through toHost, as lines, with the id of the host
// request whose stream carried it (nil for the GET stream's).
//
// Which era a request belongs to is the request's to say: one naming a
// stateless-era version in its _meta is sent as that revision sends it (its
// version, Mcp-Method and Mcp-Name headers, no session, cancelled by closing
// its stream); any other belongs to the session the host opened with
// initialize.
type upstream struct {
	url      string
	logURL   string // url without credentials, for messages
	header   http.Header
	client   *http.Client
	maxFrame int
	toHost   func(from string, line []byte, forID json.RawMessage)
	say      func(string, ...any)

	ctx    context.Context
	cancel context.CancelFunc

	mu         sync.Mutex
	sessionID  string
	version    string
	ended      bool
	endedSaid  bool
	getRunning bool
	// streams are the stateless-era requests in flight, by raw id.
	streams map[string]*modernRequest
	// headerParams are the arguments each tool's inputSchema marks with
	// x-mcp-header, by tool, as the last tools/list answer gave them.
	headerParams map[string][]mcpmsg.HeaderParam

	inflight sync.WaitGroup
	getDone  chan struct{}
}

// modernRequest is a stateless-era request in flight: closing its stream
// (cancel) is how that era cancels it.
type modernRequest struct {
	ctx       context.Context
	cancel    context.CancelFunc
	cancelled bool // guarded by upstream.mu
}

func newUpstream(rawURL string, header http.Header, maxFrame int, toHost func(string, []byte, json.RawMessage), say func(string, ...any)) *upstream {
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
		streams:  map[string]*modernRequest{},
		getDone:  make(chan struct{}),

		headerParams: map[string][]mcpmsg.HeaderParam{},
	}
}

// send forwards one host message. The initialize request and every
// notification and response are sent before send returns, so the server
// sees them in order; other requests run concurrently, since a tool call may
// take long. A notifications/cancelled for a stateless-era request closes
// that request's stream instead of being sent: over HTTP, that revision
// cancels by closing the stream, and defines no notification.
func (u *upstream) send(line []byte) {
	m := jsonrpc.Classify(line)
	var era string
	if m.Kind == jsonrpc.Request {
		era = mcpmsg.ReadRequestMeta(m.Params).ProtocolVersion
	}
	modern := mcpmsg.IsModern(era)
	if !modern && u.isEnded() {
		u.refuse(m, "the MCP server ended the session (HTTP 404); restart the host's connection to start another")
		return
	}
	if m.Kind == jsonrpc.Notification && m.Method == mcpmsg.MethodCancelled && u.cancelStream(mcpmsg.CancelledID(m.Params)) {
		return
	}
	if m.Kind == jsonrpc.Request && (modern || m.Method != mcpmsg.MethodInitialize) {
		var mr *modernRequest
		if modern {
			mr = u.track(m.ID)
		}
		u.inflight.Add(1)
		go func() {
			defer u.inflight.Done()
			u.post(line, m, era, mr)
		}()
		return
	}
	u.post(line, m, "", nil)
	if m.Kind == jsonrpc.Notification && m.Method == mcpmsg.MethodInitialized {
		u.mu.Lock()
		start := !u.getRunning
		u.getRunning = true
		u.mu.Unlock()
		if start {
			go u.listen()
		}
	}
}

// track registers a stateless-era request in flight.
func (u *upstream) track(id json.RawMessage) *modernRequest {
	ctx, cancel := context.WithCancel(context.WithoutCancel(u.ctx))
	mr := &modernRequest{ctx: ctx, cancel: cancel}
	u.mu.Lock()
	u.streams[string(id)] = mr
	u.mu.Unlock()
	return mr
}

// untrack forgets a stateless-era request once it is answered.
func (u *upstream) untrack(id json.RawMessage, mr *modernRequest) {
	u.mu.Lock()
	if u.streams[string(id)] == mr {
		delete(u.streams, string(id))
	}
	u.mu.Unlock()
	mr.cancel()
}

// cancelStream cancels the stateless-era request id (raw) in flight by
// closing its stream, and reports whether there was one.
func (u *upstream) cancelStream(id json.RawMessage) bool {
	u.mu.Lock()
	mr, ok := u.streams[string(bytes.TrimSpace(id))]
	if ok {
		mr.cancelled = true
	}
	u.mu.Unlock()
	if ok {
		mr.cancel()
	}
	return ok
}

func (u *upstream) isCancelled(mr *modernRequest) bool {
	if mr == nil {
		return false
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	return mr.cancelled
}

// close waits for the requests in flight, stops the GET stream and ends the
// session with a DELETE (manual: "When the host closes the proxy's stdin,
// the proxy waits for the requests in flight and ends the session"). A host
// of the stateless era has no session to end.
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
	u.setHeaders(req, jsonrpc.Message{}, "")
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

// setHeaders sets the headers of a request carrying m (the zero Message for
// a GET or DELETE): the --upstream-header values, then those of m's era. A
// stateless-era request names its version, method and name (2026-07-28
// transports/streamable-http, "Request Metadata"), and a tools/call the
// arguments its tool marks with x-mcp-header, as Mcp-Param-<name>; any
// other request goes with the session's id and agreed version.
func (u *upstream) setHeaders(req *http.Request, m jsonrpc.Message, era string) {
	for k, vs := range u.header {
		req.Header[k] = vs
	}
	if mcpmsg.IsModern(era) {
		req.Header.Set("Mcp-Protocol-Version", era)
		req.Header.Set("Mcp-Method", m.Method)
		if name, ok := mcpmsg.HeaderName(m.Method, m.Params); ok {
			req.Header.Set("Mcp-Name", encodeHeaderValue(name))
			if m.Method == mcpmsg.MethodToolsCall {
				u.mu.Lock()
				params := u.headerParams[name]
				u.mu.Unlock()
				args := mcpmsg.ReadCall(m.Params).Args
				for _, p := range params {
					if v, ok := mcpmsg.HeaderValue(args, p.Path); ok {
						req.Header.Set("Mcp-Param-"+p.Header, encodeHeaderValue(v))
					}
				}
			}
		}
		return
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

// post sends one message and relays what comes back. era is a request's
// stateless-era version ("" for the session era), and mr its stream.
func (u *upstream) post(line []byte, m jsonrpc.Message, era string, mr *modernRequest) {
	ctx := context.WithoutCancel(u.ctx)
	if mr != nil {
		ctx = mr.ctx
		defer u.untrack(m.ID, mr)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.url, bytes.NewReader(line))
	if err != nil {
		u.refuse(m, fmt.Sprintf("cannot build a request to %s: %v", u.logURL, err))
		return
	}
	u.setHeaders(req, m, era)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := u.client.Do(req)
	if err != nil {
		if !u.isCancelled(mr) {
			u.refuse(m, fmt.Sprintf("cannot reach the MCP server at %s: %v", u.logURL, plainError(err)))
		}
		return
	}
	defer resp.Body.Close()
	modern := mr != nil
	if m.Method == mcpmsg.MethodInitialize {
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
	case code == http.StatusNotFound && !modern && u.hasSession():
		u.mu.Lock()
		u.ended = true
		u.mu.Unlock()
		u.refuse(m, "the MCP server ended the session (HTTP 404); restart the host's connection to start another")
	case code == http.StatusAccepted || code == http.StatusNoContent:
		if m.Kind == jsonrpc.Request {
			u.refuse(m, fmt.Sprintf("the MCP server accepted the request without answering it (HTTP %d)", code))
		}
	case code >= 200 && code < 300:
		answered := u.relay(ctx, resp, m, modern)
		if m.Kind == jsonrpc.Request && !answered && !u.isCancelled(mr) {
			u.refuse(m, "the MCP server closed its answer without a response to this request")
		}
	default:
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		if modern && u.relayError(body, m) {
			return
		}
		msg := fmt.Sprintf("the MCP server refused the request: HTTP %d", code)
		if t := bytes.TrimSpace(body[:min(len(body), 200)]); len(t) > 0 {
			msg += ": " + string(bytes.ToValidUTF8(t, []byte("?")))
		}
		u.refuse(m, msg)
	}
}

// relayError passes to the host the JSON-RPC error a stateless-era server
// answered m with in the body of an HTTP error (an unsupported version and
// the versions it speaks, a missing capability, an unknown method), so that
// the host can choose another version or fall back to initialize. A body
// without m's id gets it; that line is then the proxy's. It reports whether
// the body was such an error.
func (u *upstream) relayError(body []byte, m jsonrpc.Message) bool {
	got := jsonrpc.Classify(oneLine(body))
	if got.Kind != jsonrpc.Response || got.Error == nil {
		return false
	}
	if bytes.Equal(got.ID, m.ID) {
		u.toHost(mcplog.FromServer, got.Raw, m.ID)
		return true
	}
	u.toHost(mcplog.FromProxy, mcpmsg.AppendErrorObject(nil, m.ID, got.Error), m.ID)
	return true
}

func (u *upstream) hasSession() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.sessionID != ""
}

// relay passes a 2xx answer to the host, whether it is one JSON body or an
// event stream, and reports whether it held the response to m.
func (u *upstream) relay(ctx context.Context, resp *http.Response, m jsonrpc.Message, modern bool) bool {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt == "text/event-stream" {
		return u.relayStream(ctx, resp.Body, m, modern)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, int64(u.maxFrame)+1))
	if err != nil {
		u.say("reading the MCP server's answer: %v", plainError(err))
	}
	if len(body) > u.maxFrame {
		u.say("an answer of the MCP server is longer than --max-frame-bytes (%d); dropped", u.maxFrame)
		return false
	}
	return u.deliver(body, m)
}

// deliver passes one message of m's answer to the host, and reports
// whether it is the response to m.
func (u *upstream) deliver(data []byte, m jsonrpc.Message) bool {
	line := oneLine(data)
	if len(line) == 0 {
		return false
	}
	got := jsonrpc.Classify(line)
	answered := m.Kind == jsonrpc.Request && got.Kind == jsonrpc.Response && bytes.Equal(got.ID, m.ID)
	if answered && m.Method == mcpmsg.MethodInitialize {
		u.learnVersion(line)
	}
	if answered && m.Method == mcpmsg.MethodToolsList && got.Result != nil {
		u.learnHeaderParams(got.Result)
	}
	var forID json.RawMessage
	if m.Kind == jsonrpc.Request {
		forID = m.ID
	}
	u.toHost(mcplog.FromServer, line, forID)
	return answered
}

// relayStream passes m's event stream to the host until it holds the
// response. A session-era stream that ends before its response, having
// named an event id, is resumed as the transport says (2025-11-25
// transports §2.4, §2.1 item 6): after the retry time the server gave, a GET
// with Last-Event-ID carries on where it stopped, up to maxResumes times. A
// stateless-era stream cannot be resumed: a request whose stream breaks is
// lost, and the host is told, so that it can send it again.
func (u *upstream) relayStream(ctx context.Context, body io.ReadCloser, m jsonrpc.Message, modern bool) bool {
	r := newSSEReader(body, u.maxFrame)
	for resumes := 0; ; resumes++ {
		for {
			ev, err := r.next()
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, context.Canceled) && ctx.Err() == nil {
					u.say("reading the MCP server's event stream: %v", plainError(err))
				}
				break
			}
			if (ev.Name == "" || ev.Name == "message") && u.deliver(ev.Data, m) {
				return true
			}
		}
		last := r.LastEventID()
		if modern || m.Kind != jsonrpc.Request || last == "" || ctx.Err() != nil {
			return false
		}
		if resumes == maxResumes {
			u.say("the MCP server's event stream for request %s broke %d times; giving up on it", m.ID, maxResumes+1)
			return false
		}
		wait, ok := r.Retry()
		if !ok {
			wait = resumeBackoff << resumes
		}
		if !sleepCtx(ctx, wait) {
			return false
		}
		next, err := u.resume(ctx, last)
		if err != nil {
			if ctx.Err() == nil {
				u.say("resuming the MCP server's event stream for request %s: %v", m.ID, err)
			}
			return false
		}
		defer next.Close()
		// The resumed stream's events come after last: its ids, and the
		// retry time unless it gives another, carry on from this one's.
		nr := newSSEReader(next, u.maxFrame)
		nr.idBuf, nr.lastID, nr.retry, nr.retrySet = last, last, r.retry, r.retrySet
		r = nr
	}
}

// resume opens the GET stream that carries on a stream after the event
// last.
func (u *upstream) resume(ctx context.Context, last string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.url, nil)
	if err != nil {
		return nil, err
	}
	u.setHeaders(req, jsonrpc.Message{}, "")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Last-Event-ID", last)
	resp, err := u.client.Do(req)
	if err != nil {
		return nil, plainError(err)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); resp.StatusCode != http.StatusOK || mt != "text/event-stream" {
		resp.Body.Close()
		return nil, fmt.Errorf("HTTP %d, %s", resp.StatusCode, mt)
	}
	return resp.Body, nil
}

// learnHeaderParams keeps the arguments each listed tool marks with
// x-mcp-header, which every tools/call of it mirrors into a header.
func (u *upstream) learnHeaderParams(result []byte) {
	tools, _ := mcpmsg.ReadTools(result)
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, t := range tools {
		if ps := mcpmsg.HeaderParams(t.InputSchema); len(ps) > 0 {
			u.headerParams[t.Name] = ps
		} else {
			delete(u.headerParams, t.Name)
		}
	}
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
	u.toHost(mcplog.FromProxy, errorResponse(m.ID, -32000, "hoist-mcp: "+why), m.ID)
}

// errorResponse builds a JSON-RPC error response for id (raw).
func errorResponse(id json.RawMessage, code int, msg string) []byte {
	return mcpmsg.AppendError(nil, id, code, msg)
}

// listen keeps the GET stream open for the messages the server sends on its
// own, and opens it again when it drops, until the session ends: after the
// retry time the server last gave, and with Last-Event-ID when the stream
// named event ids, so that the server can send what the drop missed.
func (u *upstream) listen() {
	defer close(u.getDone)
	backoff := 250 * time.Millisecond
	last := ""
	for u.ctx.Err() == nil && !u.isEnded() {
		req, err := http.NewRequestWithContext(u.ctx, http.MethodGet, u.url, nil)
		if err != nil {
			return
		}
		u.setHeaders(req, jsonrpc.Message{}, "")
		req.Header.Set("Accept", "text/event-stream")
		if last != "" {
			req.Header.Set("Last-Event-ID", last)
		}
		resp, err := u.client.Do(req)
		if err != nil {
			if !sleepCtx(u.ctx, backoff) {
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
			r.idBuf, r.lastID = last, last
			for {
				ev, err := r.next()
				if err != nil {
					break
				}
				if ev.Name == "" || ev.Name == "message" {
					if line := oneLine(ev.Data); len(line) > 0 {
						u.toHost(mcplog.FromServer, line, nil)
					}
				}
			}
			last = r.LastEventID()
			if d, ok := r.Retry(); ok {
				backoff = d
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
		if !sleepCtx(u.ctx, backoff) {
			return
		}
	}
}

// sleepCtx sleeps for d unless ctx ends first; it reports whether to go on.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
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

// The sentinel of a header value sent in base64 (2026-07-28
// transports/streamable-http, "Value Encoding").
const (
	b64Prefix = "=?base64?"
	b64Suffix = "?="
)

// encodeHeaderValue returns s as a stateless-era header value (Mcp-Name):
// as it is when it is plain ASCII without surrounding whitespace, else its
// UTF-8 in base64 between the sentinel's markers, as also a plain value that
// looks like the sentinel is sent.
func encodeHeaderValue(s string) string {
	plain := s == "" || s[0] != ' ' && s[0] != '\t' && s[len(s)-1] != ' ' && s[len(s)-1] != '\t'
	for i := 0; plain && i < len(s); i++ {
		plain = s[i] == '\t' || s[i] >= 0x20 && s[i] <= 0x7e
	}
	if plain && !(len(s) >= len(b64Prefix)+len(b64Suffix) && s[:len(b64Prefix)] == b64Prefix && s[len(s)-len(b64Suffix):] == b64Suffix) {
		return s
	}
	return b64Prefix + base64.StdEncoding.EncodeToString([]byte(s)) + b64Suffix
}

// decodeHeaderValue reads a stateless-era header value: a base64 one between
// the sentinel's markers as what it encodes; ok is false for such a value
// that is not base64 of UTF-8.
func decodeHeaderValue(v string) (string, bool) {
	if len(v) < len(b64Prefix)+len(b64Suffix) || v[:len(b64Prefix)] != b64Prefix || v[len(v)-len(b64Suffix):] != b64Suffix {
		return v, true
	}
	b, err := base64.StdEncoding.DecodeString(v[len(b64Prefix) : len(v)-len(b64Suffix)])
	if err != nil || !utf8.Valid(b) {
		return "", false
	}
	return string(b), true
}
