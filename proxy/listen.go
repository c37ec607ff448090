package proxy

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hoist-mcp/hoist/jsonrpc"
	"github.com/hoist-mcp/hoist/mcplog"
)

// Limits of --listen (manual, "Hosts over HTTP").
const (
	ListenProtocol    = "2025-11-25"
	MaxListenSessions = 64
	MaxListenBody     = 4 << 20
	MaxQueuedMessages = 1000
	DefaultListenIdle = 240 * time.Minute
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
	l := &listener{
		opts:     o,
		lo:       lo,
		d:        d,
		st:       st,
		addr:     ln.Addr().String(),
		sessions: map[string]*lsession{},
		start:    o.Now(),
		hurry:    make(chan struct{}),
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
	srv := &http.Server{Handler: l, ReadHeaderTimeout: 30 * time.Second}
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

	mu       sync.Mutex
	sessions map[string]*lsession // by Mcp-Session-Id, once started
	n        int                  // sessions started
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

func (l *listener) post(w http.ResponseWriter, r *http.Request) {
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		writeJSONError(w, http.StatusUnsupportedMediaType, "Content-Type must be application/json")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxListenBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeJSONError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("a message is at most %d bytes", MaxListenBody))
			return
		}
		writeJSONError(w, http.StatusBadRequest, "reading the request body: "+err.Error())
		return
	}
	line := oneLine(body)
	m := jsonrpc.Classify(line)
	if !m.Kind.IsMessage() || m.Kind == jsonrpc.Batch {
		writeJSONError(w, http.StatusBadRequest, "the body must be one JSON-RPC message")
		return
	}
	sid := r.Header.Get("Mcp-Session-Id")
	var s *lsession
	if sid == "" {
		if m.Kind != jsonrpc.Request || m.Method != "initialize" {
			writeJSONError(w, http.StatusBadRequest, "missing Mcp-Session-Id: start a session with initialize")
			return
		}
		var status int
		s, status, err = l.newSession(r)
		if err != nil {
			writeJSONError(w, status, err.Error())
			return
		}
	} else if s = l.session(sid); s == nil {
		writeJSONError(w, http.StatusNotFound, "session not found: it ended; start another with initialize")
		return
	}
	s.touch()
	if m.Kind != jsonrpc.Request {
		s.fromHost(line)
		w.WriteHeader(http.StatusAccepted)
		return
	}
	wt, err := s.wait(m.ID, acceptsSSE(r))
	if err != nil {
		writeJSONError(w, http.StatusBadRequest, err.Error())
		return
	}
	defer s.unwait(m.ID, wt)
	s.fromHost(line)
	w.Header().Set("Mcp-Session-Id", s.id)
	if wt.sse {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache, no-transform")
		w.WriteHeader(http.StatusOK)
		http.NewResponseController(w).Flush()
	}
	for {
		select {
		case msg := <-wt.ch:
			if !wt.sse {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusOK)
				w.Write(msg.line)
				return
			}
			if err := writeEvent(w, msg.line); err != nil || msg.final {
				return
			}
		case <-s.done:
			msg := errorResponse(m.ID, -32000, "hoist-mcp: the session ended before the MCP server answered")
			if wt.sse {
				writeEvent(w, msg)
			} else {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusOK)
				w.Write(msg)
			}
			return
		case <-r.Context().Done():
			return // a dropped stream is not a cancellation
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

// newSession starts a session for an initialize request: its id, its log
// and its server.
func (l *listener) newSession(r *http.Request) (*lsession, int, error) {
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
		id:      hex.EncodeToString(raw[:]),
		name:    fmt.Sprintf("%s-%d", mcplog.SessionID(start, os.Getpid()), n),
		waiters: map[string]*waiter{},
		done:    make(chan struct{}),
		last:    time.Now(),
	}
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
	if o.Flow != nil {
		server := o.ServerName
		if server == "" {
			server = o.Domain
		}
		a := newActive(*o.Flow, server, func(f string, args ...any) { l.d.say("session "+s.id[:8]+": "+f, args...) })
		a.rec, a.context = s.rec, s.context
		a.session = hostSession
		if r.Header.Get("Hoist-Session") == "" {
			a.session = s.name
		}
		w, err := openFlowLog(o.Flow.Log, s.rec, a.session)
		if err != nil {
			l.d.say("%v", err)
		}
		a.flowLog = w
		s.active = a
	}
	if err := s.startBackend(); err != nil {
		s.endFlow()
		if a := s.active; a != nil && a.flowLog != nil {
			os.Remove(a.flowLog.Path()) // no log is left of a session that never started
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
	l.mu.Unlock()
	if s.rec != nil {
		l.d.say("session %s: recording to %s", s.id[:8], s.rec.Path())
	}
	return s, 0, nil
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
