package proxy

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	machine "github.com/hoist-mcp/hoist/active"
	"mime"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hoist-mcp/hoist/jsonrpc"
	"github.com/hoist-mcp/hoist/jsontext"
	"github.com/hoist-mcp/hoist/mcplog"
	"github.com/hoist-mcp/hoist/mcpmsg"
	"github.com/hoist-mcp/hoist/telemetry"
)

// Limits of --listen (manual, "Hosts over HTTP"). ListenProtocol is the
// session-era revision it serves a host that opens with initialize; a host
// of the stateless era (2026-07-28, mcpmsg.ProtocolModern) is served by
// that revision's rules, request by request, beside it.
const (
	ListenProtocol    = "2025-11-25"
	MaxListenSessions = 64
	MaxListenBody     = 4 << 20
	MaxQueuedMessages = 1000
	DefaultListenIdle = 240 * time.Minute
	// DefaultListenReadTimeout bounds the time a request has to send its
	// head, and again its body (--listen-read-timeout; issue 25, item 2).
	DefaultListenReadTimeout = 30 * time.Second
	// DefaultListenInFlight is how many bytes of request bodies the proxy
	// holds at most, across sessions: sixteen of the largest messages.
	DefaultListenInFlight = 16 * MaxListenBody
	// retryAfter is the Retry-After of a body refused over that budget,
	// in seconds.
	retryAfter = "5"
)

// ListenOptions configure --listen.
type ListenOptions struct {
	// Addr is host:port to listen on.
	Addr string
	// Token, when set, is required as "Authorization: Bearer <token>" and
	// allows any address; without it only loopback addresses are served.
	Token string
	// Idle ends a session after this long with no request and no open
	// stream.
	Idle time.Duration
	// Ready, when set, is called with the URL once the proxy listens.
	Ready func(url string)
	// ReadTimeout bounds the time a request has to send its head, and
	// again its body; DefaultListenReadTimeout when 0.
	ReadTimeout time.Duration
	// MaxInFlight is how many bytes of request bodies the proxy holds at
	// most, from their arrival until their request has been handled; a
	// body that would pass it is refused (503, Retry-After).
	// DefaultListenInFlight when 0.
	MaxInFlight int64
}

// IsLoopback reports whether host (a name or an IP, from host:port) is a
// loopback address.
func IsLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// RunListen serves hosts over Streamable HTTP until ctx ends: each MCP
// session gets its own server (o.Command, or its own --upstream session)
// and its own log. It returns the proxy's exit code.
func RunListen(ctx context.Context, o Options, lo ListenOptions, st Streams) int {
	o.setDefaults()
	d := &diag{w: st.Err}
	if lo.Idle <= 0 {
		lo.Idle = DefaultListenIdle
	}
	host, _, err := net.SplitHostPort(lo.Addr)
	if err != nil {
		d.say("--listen %s: %v", lo.Addr, err)
		return ExitUsage
	}
	if lo.Token == "" && !IsLoopback(host) {
		d.say("--listen %s: without --listen-token-file the proxy listens only on a loopback address (127.0.0.1, [::1], localhost)", lo.Addr)
		return ExitUsage
	}
	if o.Record != "" {
		if err := recordDir(o.Record); err != nil {
			d.say("%v", err)
			return ExitProxy
		}
	}
	ln, err := net.Listen("tcp", lo.Addr)
	if err != nil {
		d.say("listening on %s: %v", lo.Addr, err)
		return ExitProxy
	}
	if lo.ReadTimeout <= 0 {
		lo.ReadTimeout = DefaultListenReadTimeout
	}
	if lo.MaxInFlight <= 0 {
		lo.MaxInFlight = DefaultListenInFlight
	}
	l := &listener{
		opts:      o,
		lo:        lo,
		d:         d,
		st:        st,
		addr:      ln.Addr().String(),
		sessions:  map[string]*lsession{},
		stateless: map[string]*lsession{},
		opening:   map[string]*opening{},
		start:     o.Now(),
		hurry:     make(chan struct{}),
		bodies:    &bodyBudget{max: lo.MaxInFlight},
	}
	url, every := hostURL(host, l.addr)
	fmt.Fprintln(st.Out, url)
	if every {
		d.say("serving MCP at %s, listening on every interface (%s): from another machine, use this machine's name or address in the URL", url, lo.Addr)
	} else {
		d.say("serving MCP at %s", url)
	}
	if lo.Ready != nil {
		lo.Ready(url)
	}
	srv := l.httpServer()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	janitorDone := make(chan struct{})
	jctx, jcancel := context.WithCancel(ctx)
	go func() {
		defer close(janitorDone)
		l.janitor(jctx)
	}()

	code := 0
	select {
	case <-ctx.Done():
	case err := <-served:
		d.say("serving HTTP: %v", err)
		code = ExitProxy
	}
	jcancel()
	<-janitorDone
	// Take no new connection while the sessions end (their streams close
	// with them), then let the HTTP server go.
	sctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(sctx) }()
	l.stopAll()
	timer := time.NewTimer(drainGrace)
	defer timer.Stop()
	select {
	case <-shut:
	case <-timer.C:
		cancel()
		<-shut
		srv.Close()
	}
	return code
}

// hostURL returns the URL to print for the proxy listening on addr, asked
// for as host, and whether host means every interface (0.0.0.0, ::, or
// none; Go then listens on both families and reports [::]). Such an address
// is no place to connect to, so the URL names this machine's loopback
// address of the family asked for instead: a host beside the proxy can use
// it as printed, and one elsewhere swaps in the machine's name, which the
// proxy cannot know for sure.
func hostURL(host, addr string) (string, bool) {
	_, port, err := net.SplitHostPort(addr)
	ip := net.ParseIP(host)
	if err != nil || (host != "" && (ip == nil || !ip.IsUnspecified())) {
		return "http://" + addr + "/mcp", false
	}
	loop := "127.0.0.1"
	if ip != nil && ip.To4() == nil {
		loop = "::1"
	}
	return "http://" + net.JoinHostPort(loop, port) + "/mcp", true
}

// httpServer returns the HTTP server of --listen. A request's head must
// arrive within lo.ReadTimeout, and so must its body (post, readBody).
// There is no IdleTimeout: a connection idle between requests may be a
// stateless-era host's session (connClosed).
func (l *listener) httpServer() *http.Server {
	return &http.Server{
		Handler:           l,
		ReadHeaderTimeout: l.lo.ReadTimeout,
		// A stateless-era host without a Hoist-Session header is one hoist
		// session per connection: each request learns its connection, and
		// the connection's closing ends its session.
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, connKey{}, c.RemoteAddr().String())
		},
		ConnState: func(c net.Conn, cs http.ConnState) {
			if cs == http.StateClosed || cs == http.StateHijacked {
				l.connClosed(c.RemoteAddr().String())
			}
		},
	}
}

// listener is the HTTP side of --listen.
type listener struct {
	opts  Options
	lo    ListenOptions
	d     *diag
	st    Streams
	addr  string
	start time.Time

	servers children // every server started, for stopAll's last step
	// hurry is closed at stopAll's deadline: sessions still ending stop
	// waiting for their servers' output.
	hurry chan struct{}
	// bodies counts the bytes of request bodies held, across sessions.
	bodies *bodyBudget

	mu       sync.Mutex
	sessions map[string]*lsession // by Mcp-Session-Id (a random one for the stateless era), once started
	// stateless are the sessions of stateless-era hosts, by statelessKey,
	// once started; opening those being started, so that two requests of
	// one host arriving together start one.
	stateless map[string]*lsession
	opening   map[string]*opening
	n         int // sessions started
	// slots counts the sessions that hold one of the MaxListenSessions:
	// from the moment initialize reserves it, before the server starts,
	// until the session has ended and its server has exited. live has one
	// count per slot, for stopAll to wait on.
	slots   int
	live    sync.WaitGroup
	closing bool // stopAll has begun: no new session
}

func (l *listener) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/mcp" {
		http.Error(w, "not found: the MCP endpoint is /mcp", http.StatusNotFound)
		return
	}
	if status, why := l.admit(r); status != 0 {
		if status == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Bearer realm="hoist-mcp"`)
		}
		http.Error(w, why, status)
		return
	}
	switch r.Method {
	case http.MethodPost:
		l.post(w, r)
	case http.MethodGet:
		l.get(w, r)
	case http.MethodDelete:
		l.delete(w, r)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

// admit applies who may connect (manual, "Who may connect"): a bearer
// token when one is set; otherwise the Host header must name the loopback
// address served; and a browser page on another site is refused by its
// Origin. It returns 0 to go on, or the status to refuse with.
func (l *listener) admit(r *http.Request) (int, string) {
	if l.lo.Token != "" {
		tok, ok := bearerToken(r.Header.Get("Authorization"))
		if !ok || subtle.ConstantTimeCompare([]byte(tok), []byte(l.lo.Token)) != 1 {
			return http.StatusUnauthorized, "unauthorized: send Authorization: Bearer <token>"
		}
	} else if !l.allowedHost(r.Host) {
		return http.StatusForbidden, "forbidden: the Host header does not name this server's address"
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		if !l.allowedOrigin(origin, r.Host) {
			return http.StatusForbidden, "forbidden: requests from pages on other sites are refused"
		}
	}
	return 0, ""
}

// bearerToken returns the token of an Authorization header of the Bearer
// scheme. The scheme's name is case-insensitive and one or more spaces
// follow it (RFC 9110 §11.1, §11.4); the token itself is compared exactly.
func bearerToken(auth string) (string, bool) {
	scheme, tok, ok := strings.Cut(auth, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.Trim(tok, " \t")
	return tok, tok != ""
}

func (l *listener) allowedHost(h string) bool {
	if h == l.addr {
		return true
	}
	_, port, err := net.SplitHostPort(l.addr)
	if err != nil {
		return false
	}
	hh, hp, err := net.SplitHostPort(h)
	return err == nil && hp == port && IsLoopback(hh)
}

func (l *listener) allowedOrigin(origin, host string) bool {
	for _, scheme := range []string{"http://", "https://"} {
		if o, ok := strings.CutPrefix(origin, scheme); ok {
			return o == host && (l.lo.Token != "" || l.allowedHost(o))
		}
	}
	return false
}

func acceptsSSE(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, _, _ := mime.ParseMediaType(strings.TrimSpace(part))
		if mt == "text/event-stream" || mt == "*/*" || mt == "text/*" {
			return true
		}
	}
	return false
}

// writeJSONError answers with an HTTP status and an id-less JSON-RPC error.
func writeJSONError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(errorResponse(nil, -32000, msg), '\n'))
}

// connKey is the request context's key of the connection a request came
// on (its remote address), which keys a stateless-era session whose host
// does not name one.
type connKey struct{}

// opening is a stateless-era session being started; done is closed once it
// has started, or failed to.
type opening struct {
	done   chan struct{}
	s      *lsession
	status int
	err    error
}

// statelessKey returns the key of the hoist session a stateless-era request
// belongs to (manual, "Hosts over HTTP"): the Hoist-Session header when the
// host sends one, else the connection the request came on. That era has no
// session of the protocol's own, yet a hoist session (its server, its log,
// its flow's run) needs one.
func statelessKey(r *http.Request) (key string, byConn bool) {
	if hs := r.Header.Get("Hoist-Session"); hs != "" {
		return "hoist-session " + hs, false
	}
	addr, _ := r.Context().Value(connKey{}).(string)
	return "connection " + addr, true
}

// statelessSession returns the hoist session of a stateless-era request,
// starting it on the host's first request.
func (l *listener) statelessSession(r *http.Request) (*lsession, int, error) {
	key, byConn := statelessKey(r)
	l.mu.Lock()
	if s, ok := l.stateless[key]; ok {
		l.mu.Unlock()
		return s, 0, nil
	}
	if p, ok := l.opening[key]; ok {
		l.mu.Unlock()
		<-p.done
		return p.s, p.status, p.err
	}
	p := &opening{done: make(chan struct{})}
	l.opening[key] = p
	l.mu.Unlock()
	p.s, p.status, p.err = l.newSession(r, key)
	l.mu.Lock()
	delete(l.opening, key)
	l.mu.Unlock()
	close(p.done)
	if p.err == nil && byConn && r.Context().Err() != nil {
		// Its connection closed while it started: no request can reach it.
		go l.end(p.s, "the host closed its connection")
	}
	return p.s, p.status, p.err
}

// connClosed ends the session a stateless-era host's connection keyed.
func (l *listener) connClosed(addr string) {
	l.mu.Lock()
	s := l.stateless["connection "+addr]
	l.mu.Unlock()
	if s != nil {
		go l.end(s, "the host closed its connection")
	}
}

// modernChecks checks the headers a stateless-era request must carry
// (2026-07-28 transports/streamable-http, "Server Validation"): its version
// in MCP-Protocol-Version, equal to the one in its _meta; its method in
// Mcp-Method; and for tools/call, resources/read and prompts/get the name or
// URI in Mcp-Name (base64 between the sentinel's markers, when so sent).
// It returns 0 to go on, or the HTTP status and the JSON-RPC error to
// refuse with.
func modernChecks(r *http.Request, m jsonrpc.Message) (status, code int, msg string) {
	hv := r.Header.Get("Mcp-Protocol-Version")
	bv := mcpmsg.ReadRequestMeta(m.Params).ProtocolVersion
	switch {
	case hv == "":
		return http.StatusBadRequest, mcpmsg.CodeHeaderMismatch, "the MCP-Protocol-Version header is required for a request naming " + mcpmsg.MetaProtocolVersion
	case bv == "":
		return http.StatusBadRequest, mcpmsg.CodeInvalidParams, "missing _meta member " + mcpmsg.MetaProtocolVersion
	case hv != bv:
		return http.StatusBadRequest, mcpmsg.CodeHeaderMismatch, fmt.Sprintf("header mismatch: MCP-Protocol-Version %q, %s %q", hv, mcpmsg.MetaProtocolVersion, bv)
	}
	switch hm := r.Header.Get("Mcp-Method"); {
	case hm == "":
		return http.StatusBadRequest, mcpmsg.CodeHeaderMismatch, "the Mcp-Method header is required"
	case hm != m.Method:
		return http.StatusBadRequest, mcpmsg.CodeHeaderMismatch, fmt.Sprintf("header mismatch: Mcp-Method %q, method %q", hm, m.Method)
	}
	if name, ok := mcpmsg.HeaderName(m.Method, m.Params); ok {
		raw := r.Header.Get("Mcp-Name")
		hn, valid := decodeHeaderValue(raw)
		switch {
		case raw == "":
			return http.StatusBadRequest, mcpmsg.CodeHeaderMismatch, "the Mcp-Name header is required for " + m.Method
		case !valid:
			return http.StatusBadRequest, mcpmsg.CodeHeaderMismatch, "the Mcp-Name header is not valid base64 of UTF-8"
		case hn != name:
			return http.StatusBadRequest, mcpmsg.CodeHeaderMismatch, fmt.Sprintf("header mismatch: Mcp-Name %q, body %q", hn, name)
		}
	}
	return 0, 0, ""
}

// modernStatus returns the HTTP status a stateless-era answer goes with: a
// method the server does not have is 404, bad params, a missing capability
// and an unsupported version are 400 (2026-07-28 transports/streamable-http,
// "Protocol Version Header"; basic/index, "_meta"), anything else 200.
func modernStatus(line []byte) int {
	m := jsonrpc.Classify(line)
	if m.Error == nil {
		return http.StatusOK
	}
	code, _ := jsontext.Lookup(m.Error, "code")
	switch string(code) {
	case strconv.Itoa(mcpmsg.CodeMethodNotFound):
		return http.StatusNotFound
	case strconv.Itoa(mcpmsg.CodeInvalidParams), strconv.Itoa(mcpmsg.CodeMissingRequiredClientCapability),
		strconv.Itoa(mcpmsg.CodeUnsupportedProtocolVersion), strconv.Itoa(mcpmsg.CodeHeaderMismatch):
		return http.StatusBadRequest
	}
	return http.StatusOK
}

// writeRPCError answers with an HTTP status and a JSON-RPC error to id.
func writeRPCError(w http.ResponseWriter, status int, id json.RawMessage, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(mcpmsg.AppendError(nil, id, code, msg), '\n'))
}

func (l *listener) post(w http.ResponseWriter, r *http.Request) {
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		writeJSONError(w, http.StatusUnsupportedMediaType, "Content-Type must be application/json")
		return
	}
	body, release, err := readBody(w, r, MaxListenBody, l.lo.ReadTimeout, l.bodies)
	if err != nil {
		var mbe *http.MaxBytesError
		switch {
		case errors.As(err, &mbe):
			writeJSONError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("a message is at most %d bytes", MaxListenBody))
		case errors.Is(err, errOverBudget):
			// What is left of the body is not read: the connection closes.
			w.Header().Set("Connection", "close")
			w.Header().Set("Retry-After", retryAfter)
			writeJSONError(w, http.StatusServiceUnavailable, fmt.Sprintf("the proxy holds %d bytes of requests already; retry later", l.lo.MaxInFlight))
		case errors.Is(err, os.ErrDeadlineExceeded):
			w.Header().Set("Connection", "close")
			writeJSONError(w, http.StatusRequestTimeout, fmt.Sprintf("the request body did not arrive within %v", l.lo.ReadTimeout))
		default:
			w.Header().Set("Connection", "close") // what is left of it is not read
			writeJSONError(w, http.StatusBadRequest, "reading the request body: "+err.Error())
		}
		return
	}
	// The body stays held until the request is answered: the message read
	// from it (its id among others) points into it.
	defer release()
	line := oneLine(body)
	m := jsonrpc.Classify(line)
	if !m.Kind.IsMessage() || m.Kind == jsonrpc.Batch {
		writeJSONError(w, http.StatusBadRequest, withOdd("the body must be one JSON-RPC message", line))
		return
	}
	sid := r.Header.Get("Mcp-Session-Id")
	modern := false
	var s *lsession
	switch {
	case sid != "":
		if s = l.session(sid); s == nil || s.key != "" {
			writeJSONError(w, http.StatusNotFound, "session not found: it ended; start another with initialize")
			return
		}
	case m.Kind == jsonrpc.Request && m.Method == mcpmsg.MethodInitialize:
		var status int
		s, status, err = l.newSession(r, "")
		if err != nil {
			writeJSONError(w, status, err.Error())
			return
		}
	case m.Kind == jsonrpc.Request && (mcpmsg.IsModern(r.Header.Get("Mcp-Protocol-Version")) || mcpmsg.IsModern(mcpmsg.ReadRequestMeta(m.Params).ProtocolVersion)):
		// The stateless era: no session to demand; the request says its
		// version, and its headers must say the same.
		if status, code, msg := modernChecks(r, m); status != 0 {
			writeRPCError(w, status, m.ID, code, msg)
			return
		}
		var status int
		s, status, err = l.statelessSession(r)
		if err != nil {
			writeRPCError(w, status, m.ID, -32000, "hoist-mcp: "+err.Error())
			return
		}
		modern = true
	case m.Kind == jsonrpc.Notification && mcpmsg.IsModern(r.Header.Get("Mcp-Protocol-Version")):
		// The stateless era defines no notification over HTTP; one that
		// comes anyway goes to its host's session, if it has one.
		key, _ := statelessKey(r)
		l.mu.Lock()
		s = l.stateless[key]
		l.mu.Unlock()
		if s != nil {
			s.touch()
			s.fromHost(line, r.Header)
		}
		w.WriteHeader(http.StatusAccepted)
		return
	default:
		writeJSONError(w, http.StatusBadRequest, withOdd("missing Mcp-Session-Id: start a session with initialize, or send a request of the stateless era (2026-07-28) naming its version in _meta", line))
		return
	}
	s.touch()
	if m.Kind != jsonrpc.Request {
		s.fromHost(line, r.Header)
		w.WriteHeader(http.StatusAccepted)
		return
	}
	wt, err := s.wait(m.ID, acceptsSSE(r), requestMeta(m.Params).ProgressToken)
	if err != nil {
		writeJSONError(w, http.StatusBadRequest, err.Error())
		return
	}
	defer s.unwait(m.ID, wt)
	s.fromHost(line, r.Header)
	if modern {
		l.answerModern(w, r, s, m, wt)
		return
	}
	w.Header().Set("Mcp-Session-Id", s.id)
	var head <-chan time.Time // the stream's head is due on its own
	if wt.sse {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache, no-transform")
		w.WriteHeader(http.StatusOK)
		t := time.NewTimer(headDelay)
		defer t.Stop()
		head = t.C
	}
	for {
		select {
		case <-head:
			http.NewResponseController(w).Flush()
		case msg := <-wt.ch:
			head = nil // the event carries the head
			if !wt.sse {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Content-Length", strconv.Itoa(len(msg.line)))
				w.WriteHeader(http.StatusOK)
				w.Write(msg.line)
				return
			}
			if err := writeEvent(w, msg.line); err != nil || msg.final {
				return
			}
		case <-s.done:
			writeEnded(w, m.ID, wt.sse)
			return
		case <-r.Context().Done():
			return // a dropped stream is not a cancellation
		}
	}
}

// writeEnded answers request id when its session ended before the server
// did: as an event on the stream already open, else as one JSON body.
func writeEnded(w http.ResponseWriter, id json.RawMessage, streaming bool) {
	msg := errorResponse(id, -32000, "hoist-mcp: the session ended before the MCP server answered")
	if streaming {
		writeEvent(w, msg)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(msg)
}

// answerModern answers a stateless-era request: its response alone as one
// JSON body, with the HTTP status its error calls for, when nothing came
// before it; else an event stream of what the server sent for it, then the
// response. Closing the stream before the response cancels the request, as
// that era has it: the server is told, and a late answer is dropped.
func (l *listener) answerModern(w http.ResponseWriter, r *http.Request, s *lsession, m jsonrpc.Message, wt *waiter) {
	streaming := false
	for {
		select {
		case msg := <-wt.ch:
			if msg.final && !streaming {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(modernStatus(msg.line))
				w.Write(msg.line)
				return
			}
			if !streaming {
				streaming = true
				w.Header().Set("Content-Type", "text/event-stream")
				w.Header().Set("Cache-Control", "no-cache, no-transform")
				w.Header().Set("X-Accel-Buffering", "no")
				w.WriteHeader(http.StatusOK)
			}
			if err := writeEvent(w, msg.line); err != nil || msg.final {
				return
			}
		case <-s.done:
			writeEnded(w, m.ID, streaming)
			return
		case <-r.Context().Done():
			s.cancel(m.ID)
			return
		}
	}
}

func (l *listener) get(w http.ResponseWriter, r *http.Request) {
	if !acceptsSSE(r) {
		http.Error(w, "the GET stream needs Accept: text/event-stream", http.StatusNotAcceptable)
		return
	}
	sid := r.Header.Get("Mcp-Session-Id")
	if sid == "" {
		writeJSONError(w, http.StatusBadRequest, "missing Mcp-Session-Id")
		return
	}
	s := l.session(sid)
	if s == nil {
		writeJSONError(w, http.StatusNotFound, "session not found: it ended; start another with initialize")
		return
	}
	ch, backlog, ok := s.openStream()
	if !ok {
		writeJSONError(w, http.StatusConflict, "this session already has a GET stream")
		return
	}
	defer s.closeStream(ch)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache, no-transform")
	w.WriteHeader(http.StatusOK)
	http.NewResponseController(w).Flush()
	for _, msg := range backlog {
		if writeEvent(w, msg) != nil {
			return
		}
	}
	for {
		select {
		case msg := <-ch:
			if writeEvent(w, msg) != nil {
				return
			}
		case <-s.done:
			return
		case <-r.Context().Done():
			return
		}
	}
}

func (l *listener) delete(w http.ResponseWriter, r *http.Request) {
	sid := r.Header.Get("Mcp-Session-Id")
	if sid == "" {
		writeJSONError(w, http.StatusBadRequest, "missing Mcp-Session-Id")
		return
	}
	s := l.session(sid)
	if s == nil {
		writeJSONError(w, http.StatusNotFound, "session not found")
		return
	}
	l.end(s, "the host ended it (DELETE)")
	w.WriteHeader(http.StatusNoContent)
}

func (l *listener) session(id string) *lsession {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sessions[id]
}

// newSession starts a session for an initialize request, or for the first
// request of a stateless-era host (key is its statelessKey; "" for
// initialize): its id, its log and its server.
func (l *listener) newSession(r *http.Request, key string) (*lsession, int, error) {
	// The slot is taken before anything starts, so that a burst of
	// initialize requests cannot start more servers than the cap.
	l.mu.Lock()
	switch {
	case l.closing:
		l.mu.Unlock()
		return nil, http.StatusServiceUnavailable, errStopping
	case l.slots >= MaxListenSessions:
		l.mu.Unlock()
		return nil, http.StatusServiceUnavailable, fmt.Errorf("too many sessions: at most %d at once", MaxListenSessions)
	}
	l.slots++
	l.live.Add(1)
	l.n++
	n := l.n
	l.mu.Unlock()
	started := false
	defer func() {
		if !started {
			l.release()
		}
	}()

	var raw [16]byte
	rand.Read(raw[:])
	o := l.opts
	start := o.Now()
	s := &lsession{
		l:       l,
		key:     key,
		id:      hex.EncodeToString(raw[:]),
		name:    fmt.Sprintf("%s-%d", mcplog.SessionID(start, os.Getpid()), n),
		waiters: map[string]*waiter{},
		done:    make(chan struct{}),
		last:    time.Now(),
	}
	sessionID := s.id // mcp.session.id: the stateless era has none
	if key != "" {
		sessionID = ""
	}
	s.tel = o.Telemetry.Session(sessionID, telemetry.TCP)
	hostSession := r.Header.Get("Hoist-Session")
	if hostSession == "" {
		hostSession = "http-" + s.id
	}
	if o.Record != "" {
		if o.RetainDays > 0 {
			if pruned, err := Prune(o.Record, o.RetainDays, start); err != nil {
				l.d.say("warning: %v", err)
			} else if pruned > 0 {
				l.d.say("deleted %d session file(s) older than %d days from %s", pruned, o.RetainDays, o.Record)
			}
		}
		h := mcplog.Header{
			Log:           mcplog.Version,
			Session:       s.name,
			StartedUnixMS: start.UnixMilli(),
			ServerCommand: mcplog.ScrubCommand(o.Command),
			Domain:        mcplog.StringOrNil(o.Domain),
			AgentModel:    mcplog.StringOrNil(o.AgentModel),
			HostSession:   hostSession,
			ServerName:    o.ServerName,
		}
		if o.Upstream != "" {
			h.ServerCommand = []string{}
			h.Upstream = mcplog.ScrubURL(o.Upstream)
		}
		rec, err := mcplog.Create(filepath.Join(o.Record, s.name+".jsonl"), h, start)
		if err != nil {
			l.d.say("%v", err)
			return nil, http.StatusInternalServerError, errors.New("the proxy cannot create the session log")
		}
		s.rec = rec
	}
	if o.Context != "" {
		name := r.Header.Get("Hoist-Session")
		if name == "" {
			name = s.name
		}
		s.context = &contextTail{path: SessionPath(o.Context, name)}
	}
	if o.activeMode() {
		server := o.ServerName
		if server == "" {
			server = o.Domain
		}
		var fo FlowOptions
		if o.Flow != nil {
			fo = *o.Flow
		}
		a := newActive(fo, server, func(f string, args ...any) { l.d.say("session "+s.id[:8]+": "+f, args...) })
		a.rec, a.context = s.rec, s.context
		a.observe = observer(s.tel)
		a.session = hostSession
		if r.Header.Get("Hoist-Session") == "" {
			a.session = s.name
		}
		if o.Flow != nil {
			w, err := openFlowLog(o.Flow.Log, s.rec, a.session)
			if err != nil {
				l.d.say("%v", err)
			}
			a.flowLog = w
		}
		if err := a.setUpActive(o, s.rec, s.context, a.session); err != nil {
			l.d.say("%v", err)
		}
		s.active = a
	}
	if o.Console != nil {
		// A console attachment of the session's own: its frames are held
		// apart from every other session's.
		s.console = newConsoleClient(*o.Console, s.name, o.serverName(), s.rec, func(f string, args ...any) { l.d.say("session "+s.id[:8]+": "+f, args...) })
		s.console.toHost = func(line []byte) { s.deliver(jsonrpc.TrimLine(line)) }
		s.console.toSrv = func(line []byte) { s.toServer(line) }
		if s.tel != nil {
			s.console.observe = s.tel.Hold
		}
	}
	if err := s.startBackend(); err != nil {
		s.closeConsole()
		s.endFlow()
		if a := s.active; a != nil && a.flowLog != nil {
			os.Remove(a.flowLog.Path()) // no log is left of a session that never started
		}
		if a := s.active; a != nil {
			a.removeOwnGuardsLog()
		}
		if s.rec != nil {
			s.rec.Close()
			os.Remove(s.rec.Path())
		}
		if errors.Is(err, errStopping) {
			return nil, http.StatusServiceUnavailable, err
		}
		l.d.say("%v", err)
		return nil, http.StatusBadGateway, fmt.Errorf("the proxy cannot start the MCP server: %v", err)
	}
	started = true
	l.mu.Lock()
	s.registered = true
	if stopping, why := l.closing, s.endEarly; stopping || why != "" {
		// stopAll did not see this session, or its server is gone already.
		l.mu.Unlock()
		if stopping {
			why = "the proxy is stopping"
		}
		s.shutdown(why)
		l.release()
		if stopping {
			return nil, http.StatusServiceUnavailable, errStopping
		}
		return nil, http.StatusBadGateway, errors.New("the MCP server exited as the session started")
	}
	l.sessions[s.id] = s
	if key != "" {
		l.stateless[key] = s
	}
	l.mu.Unlock()
	if s.rec != nil {
		l.d.say("session %s: recording to %s", s.id[:8], s.rec.Path())
	}
	return s, 0, nil
}

// withOdd adds to a 400's message the member of line two common decoders
// read differently, when there is one: a "Method" where "method" belongs
// reads as no message to an exact reader, and the host's author must see
// which member to fix (issue 23).
func withOdd(msg string, line []byte) string {
	if odd := mcpmsg.ReadView(line).Odd; odd != "" {
		return msg + ": " + machine.OddRefusal(odd)
	}
	return msg
}

// end ends a session once: the server's input is closed (or the upstream
// session deleted), the server stopped in steps, the log closed; later
// requests get 404. It returns once all that is done and the session's slot
// is free again.
func (l *listener) end(s *lsession, why string) {
	l.mu.Lock()
	if !s.registered {
		// Its server exited while newSession was still starting it:
		// newSession ends it.
		if s.endEarly == "" {
			s.endEarly = why
		}
		l.mu.Unlock()
		return
	}
	if l.sessions[s.id] != s {
		l.mu.Unlock()
		return
	}
	delete(l.sessions, s.id)
	if s.key != "" && l.stateless[s.key] == s {
		delete(l.stateless, s.key)
	}
	l.mu.Unlock()
	s.shutdown(why)
	l.release()
}

// release frees a session's slot.
func (l *listener) release() {
	l.mu.Lock()
	l.slots--
	l.mu.Unlock()
	l.live.Done()
}

// stopAll ends every session when the proxy stops, on the schedule a
// session's own end follows: each server's stdin is closed at once, SIGTERM
// follows after --stop-grace, and at 2 × --stop-grace whatever server still
// runs (of any session, one still starting or one already ending) gets
// SIGKILL. It returns once every session has ended, or shortly after that
// deadline with every server reaped, so the proxy never exits with one
// behind.
func (l *listener) stopAll() {
	l.mu.Lock()
	l.closing = true
	all := make([]*lsession, 0, len(l.sessions))
	for _, s := range l.sessions {
		all = append(all, s)
	}
	l.mu.Unlock()
	for _, s := range all {
		go l.end(s, "the proxy is stopping")
	}
	done := make(chan struct{})
	go func() { l.live.Wait(); close(done) }()
	grace := l.opts.StopGrace
	deadline := time.NewTimer(2 * grace)
	defer deadline.Stop()
	select {
	case <-done:
		return
	case <-deadline.C:
	}
	close(l.hurry)
	if left := l.servers.killAll(drainGrace, l.d.say); len(left) > 0 {
		l.d.say("server(s) %v did not exit after SIGKILL", left)
	}
	// The servers are gone; the sessions close their logs.
	last := time.NewTimer(drainGrace)
	defer last.Stop()
	select {
	case <-done:
	case <-last.C:
		l.d.say("some sessions did not close their logs within %v of their servers' end", drainGrace)
	}
}

// janitor ends sessions idle for longer than --listen-idle.
func (l *listener) janitor(ctx context.Context) {
	tick := min(max(l.lo.Idle/4, 10*time.Millisecond), 30*time.Second)
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		l.mu.Lock()
		var idle []*lsession
		for _, s := range l.sessions {
			if s.idleFor() > l.lo.Idle {
				idle = append(idle, s)
			}
		}
		l.mu.Unlock()
		for _, s := range idle {
			go l.end(s, fmt.Sprintf("idle for more than %v", l.lo.Idle))
		}
	}
}
