package demo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"mime"
	"net"
	"net/http"
	"strings"
	"sync"

	"github.com/hoist-mcp/hoist/mcpmsg"
)

// HTTP serves the demo over MCP's Streamable HTTP transport at /mcp, and is
// strict where servers may be: every request after initialize must carry the
// session id it assigned and the protocol version it negotiated (400
// otherwise, 404 for a session it does not know), so that a proxy's headers
// are checked for real.
//
// Requests are answered with one JSON body, except tools/call, which is
// answered on an event stream: a notifications/progress first when the call
// carries a progressToken, then the result. Two arguments exercise a proxy's
// handling of the session: "notify": text sends a notifications/message on
// the session's GET stream, and "end_session": true ends the session after
// the answer, so that later requests get 404.
type HTTP struct {
	Server *Server

	mu       sync.Mutex
	sessions map[string]*httpSession
}

type httpSession struct {
	version string
	server  *Server // the session's own world, for a SessionWorld
	mu      sync.Mutex
	stream  chan []byte // the GET stream, nil when none
}

func (h *HTTP) session(id string) *httpSession {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sessions[id]
}

func httpError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "error": map[string]any{"code": -32000, "message": msg}})
	w.Write(b)
}

func accepts(r *http.Request, want string) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		if mt, _, _ := mime.ParseMediaType(strings.TrimSpace(part)); mt == want {
			return true
		}
	}
	return false
}

// ServeHTTP implements http.Handler.
func (h *HTTP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/mcp" {
		http.NotFound(w, r)
		return
	}
	var s *httpSession
	id := r.Header.Get("Mcp-Session-Id")
	if r.Method != http.MethodPost || id != "" {
		if id == "" {
			httpError(w, http.StatusBadRequest, "missing Mcp-Session-Id")
			return
		}
		if s = h.session(id); s == nil {
			httpError(w, http.StatusNotFound, "session not found")
			return
		}
		if v := r.Header.Get("Mcp-Protocol-Version"); v != s.version {
			httpError(w, http.StatusBadRequest, "MCP-Protocol-Version must be "+s.version+", got "+v)
			return
		}
	}
	switch r.Method {
	case http.MethodPost:
		h.post(w, r, id, s)
	case http.MethodGet:
		h.get(w, r, s)
	case http.MethodDelete:
		h.mu.Lock()
		delete(h.sessions, id)
		h.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		httpError(w, http.StatusMethodNotAllowed, "method not allowed")
	}
}

func (h *HTTP) post(w http.ResponseWriter, r *http.Request, id string, s *httpSession) {
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		httpError(w, http.StatusUnsupportedMediaType, "Content-Type must be application/json")
		return
	}
	if !accepts(r, "application/json") || !accepts(r, "text/event-stream") {
		httpError(w, http.StatusNotAcceptable, "Accept must list application/json and text/event-stream")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 4<<20))
	if err != nil {
		httpError(w, http.StatusRequestEntityTooLarge, err.Error())
		return
	}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			ProtocolVersion string `json:"protocolVersion"`
			Arguments       struct {
				Notify     string `json:"notify"`
				EndSession bool   `json:"end_session"`
			} `json:"arguments"`
			Meta struct {
				ProgressToken json.RawMessage `json:"progressToken"`
			} `json:"_meta"`
		} `json:"params"`
	}
	if err := json.Unmarshal(body, &msg); err != nil {
		httpError(w, http.StatusBadRequest, "the body must be one JSON-RPC message")
		return
	}
	if s == nil && (msg.Method == mcpmsg.MethodDiscover || mcpmsg.IsModern(mcpmsg.ReadRequestMeta(msgParams(body)).ProtocolVersion)) {
		h.stateless(w, r, body)
		return
	}
	if s == nil {
		if msg.Method != "initialize" {
			httpError(w, http.StatusBadRequest, "missing Mcp-Session-Id")
			return
		}
		var raw [16]byte
		rand.Read(raw[:])
		id = hex.EncodeToString(raw[:])
		params, _ := json.Marshal(map[string]string{"protocolVersion": msg.Params.ProtocolVersion})
		s = &httpSession{version: Negotiate(params), server: h.Server}
		if sw, ok := h.Server.world().(SessionWorld); ok {
			s.server = &Server{Version: h.Server.Version, World: sw.NewSession()}
		}
		h.mu.Lock()
		if h.sessions == nil {
			h.sessions = map[string]*httpSession{}
		}
		h.sessions[id] = s
		h.mu.Unlock()
		w.Header().Set("Mcp-Session-Id", id)
	}
	if msg.ID == nil || msg.Method == "" {
		w.WriteHeader(http.StatusAccepted) // a notification or a response
		return
	}
	if msg.Method != "tools/call" {
		var answer []byte
		s.server.Handle(body, func(b []byte) { answer = b })
		w.Header().Set("Content-Type", "application/json")
		w.Write(answer)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	event := func(b []byte) {
		w.Write([]byte("event: message\ndata: "))
		w.Write(b)
		w.Write([]byte("\n\n"))
		http.NewResponseController(w).Flush()
	}
	if tok := msg.Params.Meta.ProgressToken; tok != nil {
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/progress",
			"params": map[string]any{"progressToken": tok, "progress": 1, "total": 1}})
		event(b)
	}
	if text := msg.Params.Arguments.Notify; text != "" {
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/message",
			"params": map[string]any{"level": "info", "data": text}})
		s.mu.Lock()
		if s.stream != nil {
			s.stream <- b
		}
		s.mu.Unlock()
	}
	if msg.Params.Arguments.EndSession {
		// The session ends before the answer goes out, so that whoever has
		// the answer finds the session gone.
		h.mu.Lock()
		delete(h.sessions, id)
		h.mu.Unlock()
		s.mu.Lock()
		if s.stream != nil {
			close(s.stream)
			s.stream = nil
		}
		s.mu.Unlock()
	}
	if run := s.server.Handle(body, event); run != nil {
		run(r.Context())
	}
}

func (h *HTTP) get(w http.ResponseWriter, r *http.Request, s *httpSession) {
	if !accepts(r, "text/event-stream") {
		httpError(w, http.StatusNotAcceptable, "Accept must list text/event-stream")
		return
	}
	ch := make(chan []byte, 16)
	s.mu.Lock()
	if s.stream != nil {
		s.mu.Unlock()
		httpError(w, http.StatusConflict, "this session already has a GET stream")
		return
	}
	s.stream = ch
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if s.stream == ch {
			s.stream = nil
		}
		s.mu.Unlock()
	}()
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	http.NewResponseController(w).Flush()
	for {
		select {
		case b, ok := <-ch:
			if !ok {
				return
			}
			w.Write([]byte("event: message\ndata: "))
			w.Write(b)
			w.Write([]byte("\n\n"))
			http.NewResponseController(w).Flush()
		case <-r.Context().Done():
			return
		}
	}
}

// ListenAndServe serves h on addr until ctx ends; ready is called with the
// URL once it listens.
func ListenAndServe(ctx context.Context, addr string, h *HTTP, ready func(url string)) error {
	srv := &http.Server{Addr: addr, Handler: h}
	ln, err := listen(addr)
	if err != nil {
		return err
	}
	if ready != nil {
		ready("http://" + ln.Addr().String() + "/mcp")
	}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	if err := srv.Serve(ln); err != http.ErrServerClosed {
		return err
	}
	return nil
}

func listen(addr string) (net.Listener, error) { return net.Listen("tcp", addr) }

// msgParams returns a message's params, raw, or nil.
func msgParams(body []byte) []byte {
	var m struct {
		Params json.RawMessage `json:"params"`
	}
	json.Unmarshal(body, &m)
	return m.Params
}

// stateless answers a request of the stateless era (2026-07-28), which
// opens no session: one JSON body, with the HTTP status the revision gives
// its error (404 for an unknown method, 400 for bad params or a version the
// demo does not speak). A tools/call runs before the answer is written.
func (h *HTTP) stateless(w http.ResponseWriter, r *http.Request, body []byte) {
	var answer []byte
	if run := h.Server.Handle(body, func(b []byte) { answer = b }); run != nil {
		run(r.Context())
	}
	var e struct {
		Error *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	json.Unmarshal(answer, &e)
	status := http.StatusOK
	switch {
	case e.Error == nil:
	case e.Error.Code == mcpmsg.CodeMethodNotFound:
		status = http.StatusNotFound
	case e.Error.Code == mcpmsg.CodeInvalidParams || e.Error.Code == mcpmsg.CodeUnsupportedProtocolVersion:
		status = http.StatusBadRequest
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(answer)
}
