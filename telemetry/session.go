package telemetry

import (
	"context"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/hoist-mcp/hoist/jsonrpc"
	"github.com/hoist-mcp/hoist/jsontext"
	"github.com/hoist-mcp/hoist/mcpmsg"
)

// Transports of the host's side, as network.transport names them.
const (
	Pipe = "pipe" // stdio, also with --upstream
	TCP  = "tcp"  // --listen
)

// Attributes of hoist's own, beside the conventions'.
const (
	// AttrLookup marks a span of a request the proxy made of its own (a
	// flow's lookup, a step of hoist_commit).
	AttrLookup = attribute.Key("hoist.lookup")
	// AttrUnanswered marks a span the session ended before its answer.
	AttrUnanswered = attribute.Key("hoist.unanswered")
)

// ErrorTool is error.type for a tool result with isError true (MCP
// semantic conventions).
const ErrorTool = "tool_error"

// Session traces one MCP session: the host's requests, the proxy's own,
// and the events the proxy notes on them. A call reads the members it
// needs by their boundaries (scan.go) and starts or ends a span in memory;
// the SDK exports on goroutines of its own. Every method may be called on
// a nil *Session, which does nothing: that is how the proxy runs without
// --otel. The methods are safe for concurrent use.
type Session struct {
	p         *Provider
	id        string
	transport string

	mu      sync.Mutex
	calls   map[string]*call // the host's requests in flight, by raw id
	own     map[string]*call // the proxy's, by raw id
	last    *call            // the host's latest tools/call
	version string           // mcp.protocol.version, from initialize
}

type call struct {
	ctx    context.Context
	span   trace.Span
	start  time.Time
	method string
	tool   string
	own    bool
	done   bool
}

// Session starts tracing a session: id is mcp.session.id, transport the
// host's (Pipe or TCP). A nil Provider gives a nil Session.
func (p *Provider) Session(id, transport string) *Session {
	if p == nil {
		return nil
	}
	return &Session{p: p, id: id, transport: transport, calls: map[string]*call{}, own: map[string]*call{}}
}

// op is one thing a transport noted.
type op struct {
	what      opKind
	at        time.Time
	line      []byte
	delivered bool
	name      string    // Event's log kind
	hold      [4]string // Hold's point, method, why, action
}

type opKind uint8

const (
	opHost opKind = iota
	opLookup
	opServer
	opToHost
	opEvent
	opHold
)

// see handles o: line is read, never kept, and a line that is not
// JSON-RPC, or a panic while reading it, leaves no span.
func (s *Session) see(o op, line []byte) {
	defer func() { recover() }()
	o.at = time.Now()
	o.line = line
	s.handle(o)
}

// handle does what o noted.
func (s *Session) handle(o op) {
	switch o.what {
	case opHost:
		messages(o.line, func(m msg) {
			if m.Kind == jsonrpc.Request {
				s.start(m, false, o.at)
			}
		})
	case opLookup:
		messages(jsonrpc.TrimLine(o.line), func(m msg) {
			if m.Kind == jsonrpc.Request {
				s.start(m, true, o.at)
			}
		})
	case opServer, opToHost:
		messages(jsonrpc.TrimLine(o.line), func(m msg) {
			if m.Kind == jsonrpc.Response {
				if o.what == opServer {
					s.end(m, true, o.delivered, o.at)
				} else {
					s.end(m, false, true, o.at)
				}
			}
		})
	case opEvent:
		s.event(o.name, o.line, o.at)
	case opHold:
		s.hold(o.line, o.hold, o.at)
	}
}

// FromHost notes a line the host sent (without terminator): each request
// in it starts a span, parented by the traceparent in its params._meta
// when it has one. The line is only read.
func (s *Session) FromHost(line []byte) {
	if s == nil {
		return
	}
	s.see(op{what: opHost}, line)
}

// Lookup notes a request the proxy sent the server of its own (a line,
// terminator or not): a client span, the child of the host's call it
// followed.
func (s *Session) Lookup(line []byte) {
	if s == nil {
		return
	}
	s.see(op{what: opLookup}, line)
}

// FromServer notes a line from the server (terminator or not): an answer
// to one of the proxy's own requests ends its span; with delivered, the
// line reaches the host as it is, and an answer to the host's ends its
// span too (else ToHost does, when it reaches the host).
func (s *Session) FromServer(line []byte, delivered bool) {
	if s == nil {
		return
	}
	s.see(op{what: opServer, delivered: delivered}, line)
}

// ToHost notes a line the host is handed (terminator or not): each
// response in it ends its request's span.
func (s *Session) ToHost(line []byte) {
	if s == nil {
		return
	}
	s.see(op{what: opToHost}, line)
}

// start begins the span of request m.
func (s *Session) start(m msg, own bool, now time.Time) {
	method := m.Method
	name := method
	var tool string
	attrs := make([]attribute.KeyValue, 0, 9)
	attrs = append(attrs,
		semconv.McpMethodNameKey.String(method),
		semconv.JSONRPCRequestID(requestID(m.ID)),
		semconv.NetworkTransportKey.String(s.transport))
	if s.id != "" {
		attrs = append(attrs, semconv.McpSessionIDKey.String(s.id))
	}
	if method == mcpmsg.MethodToolsCall {
		tool = str(m.name)
		name += " " + tool
		attrs = append(attrs, semconv.GenAIToolName(tool), semconv.GenAIOperationNameExecuteTool)
	}
	if own {
		attrs = append(attrs, AttrLookup.Bool(true))
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if method == mcpmsg.MethodInitialize && !own {
		if v := str(m.version); v != "" && s.version == "" {
			s.version = v
		}
	}
	if s.version != "" {
		attrs = append(attrs, semconv.McpProtocolVersionKey.String(s.version))
	}
	ctx := context.Background()
	kind := trace.SpanKindServer
	if own {
		kind = trace.SpanKindClient
		if s.last != nil {
			ctx = s.last.ctx
		}
	} else {
		ctx = s.parent(m.meta)
	}
	ctx, span := s.p.tracer.Start(ctx, name, trace.WithSpanKind(kind), trace.WithTimestamp(now), trace.WithAttributes(attrs...))
	c := &call{ctx: ctx, span: span, start: now, method: method, tool: tool, own: own}
	in := s.calls
	if own {
		in = s.own
	}
	key := string(m.ID)
	if old := in[key]; old != nil {
		// An id used again before its answer: the first is left without.
		s.finish(old, now, true)
	}
	in[key] = c
	if !own && method == mcpmsg.MethodToolsCall {
		s.last = c
	}
}

// parent returns the context a traceparent (and tracestate) in a request's
// params._meta carries, or the background.
func (s *Session) parent(meta []byte) context.Context {
	ctx := context.Background()
	if jsontext.Kind(meta) != '{' {
		return ctx
	}
	carrier := propagation.MapCarrier{}
	jsontext.ScanPrefix(meta, func(k, v []byte) bool {
		switch string(k) {
		case "traceparent", "tracestate":
			if t := str(v); t != "" {
				carrier[string(k)] = t
			}
		}
		return true
	})
	if len(carrier) == 0 {
		return ctx
	}
	return s.p.prop.Extract(ctx, carrier)
}

// end ends the span of the request response m answers: the proxy's own
// when own, the host's when host.
func (s *Session) end(m msg, own, host bool, now time.Time) {
	key := string(m.ID)
	s.mu.Lock()
	c := (*call)(nil)
	if own {
		if c = s.own[key]; c != nil {
			delete(s.own, key)
		}
	}
	if c == nil && host {
		if c = s.calls[key]; c != nil {
			delete(s.calls, key)
		}
	}
	if c == nil {
		s.mu.Unlock()
		return
	}
	if c.method == mcpmsg.MethodInitialize && !c.own && m.Result != nil {
		if v := str(m.resultVersion); v != "" {
			s.version = v
			c.span.SetAttributes(semconv.McpProtocolVersionKey.String(v))
		}
	}
	version := s.version
	s.mu.Unlock()

	var errType string
	switch {
	case m.Error != nil:
		code := "_OTHER"
		if v := member(m.Error, "code"); len(v) > 0 && (v[0] == '-' || v[0] >= '0' && v[0] <= '9') {
			code = string(v)
		}
		errType = code
		msg := ""
		msg = str(member(m.Error, "message"))
		c.span.SetAttributes(semconv.RPCResponseStatusCode(code))
		c.span.SetStatus(codes.Error, msg)
	case c.method == mcpmsg.MethodToolsCall && m.Result != nil && m.isError:
		errType = ErrorTool
		c.span.SetStatus(codes.Error, "the tool's result has isError")
	}
	if errType != "" {
		c.span.SetAttributes(semconv.ErrorTypeKey.String(errType))
	}
	s.record(c, now, version, errType)
	c.span.End(trace.WithTimestamp(now))
}

// record records the request's duration: mcp.server.operation.duration for
// the host's, mcp.client.operation.duration for the proxy's own. The
// attribute sets are few (a method, a tool, a version, an error) and kept.
func (s *Session) record(c *call, now time.Time, version, errType string) {
	d := now.Sub(c.start).Seconds()
	key := setKey{c.own, c.method, c.tool, version, errType}
	opt, ok := s.p.sets.Load(key)
	if !ok {
		attrs := make([]attribute.KeyValue, 0, 5)
		attrs = append(attrs, semconv.McpMethodNameKey.String(c.method), semconv.NetworkTransportKey.String(s.transport))
		if c.tool != "" {
			attrs = append(attrs, semconv.GenAIToolName(c.tool))
		}
		if version != "" {
			attrs = append(attrs, semconv.McpProtocolVersionKey.String(version))
		}
		if errType != "" {
			attrs = append(attrs, semconv.ErrorTypeKey.String(errType))
		}
		opt, _ = s.p.sets.LoadOrStore(key, metric.WithAttributeSet(attribute.NewSet(attrs...)))
	}
	h := s.p.server.Inst()
	if c.own {
		h = s.p.client.Inst()
	}
	h.Record(context.Background(), d, opt.(metric.RecordOption))
}

// setKey names a kept attribute set of the metrics. The transport is the
// same for every session of a process.
type setKey struct {
	own                         bool
	method, tool, version, errT string
}

// finish ends c without an answer (the id was used again, or the session
// ended): its span says so. Called with s.mu held.
func (s *Session) finish(c *call, now time.Time, unanswered bool) {
	if c.done {
		return
	}
	c.done = true
	c.span.SetAttributes(AttrUnanswered.Bool(unanswered))
	c.span.End(trace.WithTimestamp(now))
}

// Close ends the spans of the requests still unanswered when the session
// ends, so that they are exported too.
func (s *Session) Close() {
	if s == nil {
		return
	}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, c := range s.calls {
		s.finish(c, now, true)
		delete(s.calls, k)
	}
	for k, c := range s.own {
		s.finish(c, now, true)
		delete(s.own, k)
	}
	s.last = nil
}

// requestID is jsonrpc.request.id: a string id's text, a number as sent.
func requestID(id []byte) string {
	if t := str(id); t != "" {
		return t
	}
	return string(id)
}

// EventLimit bounds the text of one event attribute.
const EventLimit = 1024

// Event notes a line of one of the proxy's side logs (kind "flow",
// "guards" or "confirm": a flow decision, a guard verdict, a judge's
// answer) as an event on the span of the call it is about: the host's
// request its "id" names, else the host's latest tools/call. Its scalar
// members become attributes hoist.<name>; arrays and objects their JSON
// text, cut to EventLimit bytes; a call's arguments are left out.
func (s *Session) Event(kind string, line []byte) {
	if s == nil {
		return
	}
	s.see(op{what: opEvent, name: kind}, line)
}

func (s *Session) event(kind string, line []byte, at time.Time) {
	if !jsontext.Valid(line) || jsontext.Kind(line) != '{' {
		return
	}
	typ := "line"
	var id []byte
	attrs := make([]attribute.KeyValue, 0, 8)
	for k, v := range jsontext.Members(line) {
		name := string(k)
		switch name {
		case "type":
			if jsontext.Kind(v) == '"' {
				typ = jsontext.Unquote(v)
			}
			continue
		case "args", "arguments":
			continue
		case "id":
			id = v
		}
		attrs = append(attrs, attr("hoist."+name, v))
	}
	s.note(id, "hoist."+kind+"."+typ, attrs, at)
}

// Hold notes a console hold of the frame of request id (raw JSON; nil when
// it is not a request's) at point ("before" or "after"), why it was held,
// and, once decided, the person's action ("" while it waits).
func (s *Session) Hold(id []byte, point, method, why, action string) {
	if s == nil {
		return
	}
	s.see(op{what: opHold, hold: [4]string{point, method, why, action}}, id)
}

func (s *Session) hold(id []byte, h [4]string, at time.Time) {
	point, method, why, action := h[0], h[1], h[2], h[3]
	if len(id) == 0 {
		id = nil
	}
	attrs := []attribute.KeyValue{
		attribute.String("hoist.point", point),
		attribute.String("hoist.method", method),
		attribute.String("hoist.why", why),
	}
	name := "hoist.console.hold"
	if action != "" {
		name = "hoist.console.decision"
		attrs = append(attrs, attribute.String("hoist.action", action))
	}
	s.note(id, name, attrs, at)
}

// note adds an event to the span of the host's request id, else of the
// host's latest tools/call.
func (s *Session) note(id []byte, name string, attrs []attribute.KeyValue, at time.Time) {
	s.mu.Lock()
	c := s.last
	if id != nil {
		if byID := s.calls[string(id)]; byID != nil {
			c = byID
		}
	}
	s.mu.Unlock()
	if c != nil {
		c.span.AddEvent(name, trace.WithAttributes(attrs...), trace.WithTimestamp(at))
	}
}

// attr turns a JSON value into an attribute.
func attr(name string, v []byte) attribute.KeyValue {
	switch jsontext.Kind(v) {
	case '"':
		return attribute.String(name, cut(jsontext.Unquote(v)))
	case 't', 'f':
		return attribute.Bool(name, string(v) == "true")
	case '{', '[':
		return attribute.String(name, cut(string(jsontext.AppendCompact(nil, v))))
	case 'n':
		return attribute.String(name, "null")
	}
	if i, err := strconv.ParseInt(string(v), 10, 64); err == nil {
		return attribute.Int64(name, i)
	}
	if f, err := strconv.ParseFloat(string(v), 64); err == nil {
		return attribute.Float64(name, f)
	}
	return attribute.String(name, cut(string(v)))
}

func cut(s string) string {
	if len(s) > EventLimit {
		return s[:EventLimit] + "…"
	}
	return s
}
