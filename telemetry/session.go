package telemetry

import (
	"bytes"
	"context"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/hoist-mcp/hoist/jsonrpc"
	"github.com/hoist-mcp/hoist/jsontext"
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
// needs by their boundaries (scan.go) and appends a record of them to the
// provider's queue (record.go); the spans and the metric are built from
// the records later, in the order they were noted, by one goroutine
// (build.go), and the SDK exports them on goroutines of its own. Every
// method may be called on a nil *Session, which does nothing: that is how
// the proxy runs without --otel. The methods are safe for concurrent use.
type Session struct {
	p         *Provider
	id        string
	transport string

	// The builder's, under p.building only.
	calls   map[idKey]*call // the host's requests in flight
	own     map[idKey]*call // the proxy's
	last    *call           // the host's latest tools/call
	version string          // mcp.protocol.version, from initialize
	closed  bool
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
	return &Session{p: p, id: id, transport: transport, calls: map[idKey]*call{}, own: map[idKey]*call{}}
}

// op is the side a line was noted on.
type op uint8

const (
	opHost op = iota
	opLookup
	opServer
	opToHost
)

// FromHost notes a line the host sent (without terminator): each request
// in it starts a span, parented by the traceparent in its params._meta
// when it has one. The line is only read.
func (s *Session) FromHost(line []byte) {
	if s == nil {
		return
	}
	s.see(opHost, line, false, "", "")
}

// FromHostHTTP is FromHost for a line the host POSTed (--listen) with the
// request's traceparent and tracestate headers ("" when absent): they
// parent each request of the line whose params._meta has no traceparent.
// They are only read.
func (s *Session) FromHostHTTP(line []byte, traceparent, tracestate string) {
	if s == nil {
		return
	}
	s.see(opHost, line, false, traceparent, tracestate)
}

// Lookup notes a request the proxy sent the server of its own (a line,
// terminator or not): a client span, the child of the host's call it
// followed.
func (s *Session) Lookup(line []byte) {
	if s == nil {
		return
	}
	s.see(opLookup, jsonrpc.TrimLine(line), false, "", "")
}

// FromServer notes a line from the server (terminator or not): an answer
// to one of the proxy's own requests ends its span; with delivered, the
// line reaches the host as it is, and an answer to the host's ends its
// span too (else ToHost does, when it reaches the host).
func (s *Session) FromServer(line []byte, delivered bool) {
	if s == nil {
		return
	}
	s.see(opServer, jsonrpc.TrimLine(line), delivered, "", "")
}

// ToHost notes a line the host is handed (terminator or not): each
// response in it ends its request's span.
func (s *Session) ToHost(line []byte) {
	if s == nil {
		return
	}
	s.see(opToHost, jsonrpc.TrimLine(line), false, "", "")
}

// Close ends the spans of the requests still unanswered when the session
// ends, so that they are exported too: it builds what is queued before it
// returns. Whatever is noted after it is not traced.
func (s *Session) Close() {
	if s == nil {
		return
	}
	s.p.push(&record{s: s, at: time.Now(), what: recClose}, nil)
	s.p.build()
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
// text, cut to EventLimit bytes; a call's arguments are left out. The
// line is copied, to be read when the event is built.
func (s *Session) Event(kind string, line []byte) {
	if s == nil {
		return
	}
	r := record{s: s, at: time.Now(), what: recEvent}
	r.rare().kind = kind
	r.x.line = bytes.Clone(line)
	s.p.push(&r, nil)
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
	r := record{s: s, at: time.Now(), what: recHold, id: makeID(id)}
	r.rare().hold = [4]string{point, method, why, action}
	r.host = len(id) > 0 // the id names a request
	s.p.push(&r, nil)
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
