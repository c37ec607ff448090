package telemetry

import (
	"bytes"
	"time"

	"github.com/hoist-mcp/hoist/jsonrpc"
	"github.com/hoist-mcp/hoist/jsontext"
	"github.com/hoist-mcp/hoist/mcpmsg"
)

// The forwarding side of a Session. The proxy calls a Session's methods on
// the goroutine that forwards the line, before it forwards it, so what
// they do there is kept to reading the few members a span needs (scan.go)
// and appending a record of fixed size to the provider's queue under a
// short lock: the id's bytes copied into the record, the method's and the
// tool's names interned, a timestamp. In the common case (a request or
// its answer, with an id of at most idInline bytes and a traceparent of
// the usual length) that allocates nothing. The spans, their attributes
// and the metric are built later from the records, off the forwarding
// path, by one goroutine (build.go).

// MaxRecords bounds the records waiting to be built into spans: past it,
// records are dropped (counted, never waited for). The builder is woken
// when half of it waits, and otherwise every BuildWait.
const (
	MaxRecords = 8192
	BuildWait  = 100 * time.Millisecond
)

// maxNames bounds the interned method and tool names: past it, a name not
// yet seen is copied for its record alone, so that a host sending a new
// name each time cannot grow the table.
const maxNames = 1024

// idInline is the longest id (raw JSON) a record holds in itself; a longer
// one is copied.
const idInline = 40

// traceparentLen is a traceparent's length (version 00).
const traceparentLen = 55

type recKind uint8

const (
	recStart recKind = iota // a request: the host's, or the proxy's own
	recEnd                  // a response
	recEvent                // a side log's line
	recHold                 // a console hold or decision
	recClose                // the session ended
)

// idKey is a request's id as its raw JSON: the key of the calls in flight,
// held in the record itself up to idInline bytes.
type idKey struct {
	n    uint8
	b    [idInline]byte
	long string
}

func makeID(raw []byte) idKey {
	var k idKey
	if len(raw) <= idInline {
		k.n = uint8(len(raw))
		copy(k.b[:], raw)
	} else {
		k.long = string(raw)
	}
	return k
}

// raw returns the id's JSON text.
func (k *idKey) raw() []byte {
	if k.long != "" {
		return []byte(k.long)
	}
	return k.b[:k.n]
}

// record is what the forwarding side notes of one message, or of an event.
type record struct {
	s       *Session
	at      time.Time
	what    recKind
	own     bool // start: the proxy's own request; end: a line from the server
	host    bool // end: the line reaches the host
	result  bool // end: it has a result
	isError bool // end: the result's isError is true
	tpN     uint8
	id      idKey
	method  string // start: interned
	tool    string // start, tools/call: interned
	version string // start of initialize: the asked protocolVersion; end: the result's
	tp      [traceparentLen]byte
	x       *rare // what is rare: an error, a tracestate, an event
}

// rare holds a record's members that a common request or answer lacks.
type rare struct {
	code, message           string // end: the error's
	hasError                bool
	traceparent, tracestate string // start: a traceparent of another length; a tracestate
	kind                    string // event: the side log
	line                    []byte // event: a copy of its line
	hold                    [4]string
}

func (r *record) rare() *rare {
	if r.x == nil {
		r.x = &rare{}
	}
	return r.x
}

// traceparent returns the start's traceparent, "" for none.
func (r *record) traceparent() string {
	if r.x != nil && r.x.traceparent != "" {
		return r.x.traceparent
	}
	return string(r.tp[:r.tpN])
}

// see notes each message of line: what names the side it came from; tp
// and ts are an HTTP request's traceparent and tracestate, for a request
// whose _meta has none. A line that is not JSON-RPC, or a panic while
// reading it, notes nothing.
func (s *Session) see(what op, line []byte, delivered bool, tp, ts string) {
	defer func() { recover() }()
	now := time.Now()
	if jsontext.Kind(line) == '[' { // a batch: rare, validated first
		for m := range jsonrpc.Messages(line) {
			var x msg
			if m.Kind != jsonrpc.Batch && readMessage(m.Raw, &x) {
				s.noteMessage(what, &x, delivered, now, tp, ts)
			}
		}
		return
	}
	var x msg
	if readMessage(line, &x) {
		s.noteMessage(what, &x, delivered, now, tp, ts)
	}
}

// noteMessage queues the record of m, a request that starts a span or a
// response that may end one.
func (s *Session) noteMessage(what op, m *msg, delivered bool, now time.Time, tp, ts string) {
	var r record
	switch {
	case m.kind == jsonrpc.Request && (what == opHost || what == opLookup):
		r.what = recStart
		r.own = what == opLookup
		readMeta(&r, m.meta)
		if tp != "" && r.tpN == 0 && (r.x == nil || r.x.traceparent == "") {
			if len(tp) <= traceparentLen {
				r.tpN = uint8(copy(r.tp[:], tp))
			} else {
				r.rare().traceparent = tp
			}
			if r.x != nil {
				r.x.tracestate = ""
			}
			if ts != "" {
				r.rare().tracestate = ts
			}
		}
	case m.kind == jsonrpc.Response && (what == opServer || what == opToHost):
		r.what = recEnd
		r.own = what == opServer
		r.host = what == opToHost || delivered
		r.result = m.result
		r.isError = m.isError
		if m.err != nil {
			x := r.rare()
			x.hasError = true
			x.code = "_OTHER"
			if v := member(m.err, "code"); len(v) > 0 && (v[0] == '-' || v[0] >= '0' && v[0] <= '9') {
				x.code = string(v)
			}
			x.message = str(member(m.err, "message"))
		}
		if m.resultVersion != nil {
			r.version = str(m.resultVersion)
		}
	default:
		return
	}
	r.s = s
	r.at = now
	r.id = makeID(m.id)
	s.p.push(&r, m)
}

// readMeta notes the traceparent and tracestate of a request's _meta.
func readMeta(r *record, meta []byte) {
	c := cursor{b: meta}
	if len(meta) == 0 || !c.enter('{') {
		return
	}
	for n := 0; c.more('}'); n++ {
		if n > len(meta) {
			return
		}
		name := c.name()
		v := c.value()
		switch string(name) {
		case `"traceparent"`:
			if len(v) >= 2 && len(v)-2 <= traceparentLen && v[0] == '"' && v[len(v)-1] == '"' && bytes.IndexByte(v, '\\') < 0 {
				r.tpN = uint8(copy(r.tp[:], v[1:len(v)-1]))
			} else if t := str(v); t != "" {
				r.rare().traceparent = t
			}
		case `"tracestate"`:
			if t := str(v); t != "" {
				r.rare().tracestate = t
			}
		}
	}
}

// push appends r to the queue, the method and tool of m interned, unless
// the queue is full.
func (p *Provider) push(r *record, m *msg) {
	p.qmu.Lock()
	if len(p.queue) >= MaxRecords && r.what != recClose {
		p.dropped++
		p.qmu.Unlock()
		return
	}
	if m != nil && r.what == recStart {
		r.method = p.intern(m.method)
		switch r.method {
		case mcpmsg.MethodToolsCall:
			r.tool = p.intern(m.name)
		case mcpmsg.MethodInitialize:
			if !r.own {
				r.version = str(m.version)
			}
		}
	}
	p.queue = append(p.queue, *r)
	kick := len(p.queue) == MaxRecords/2
	p.qmu.Unlock()
	if kick {
		select {
		case p.kick <- struct{}{}:
		default:
		}
	}
}

// intern returns the text of the JSON string v, kept once for every
// record that names it; "" for a value that is not a string. Called with
// p.qmu held.
func (p *Provider) intern(v []byte) string {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return ""
	}
	inner := v[1 : len(v)-1]
	if bytes.IndexByte(inner, '\\') >= 0 {
		return str(v)
	}
	if s, ok := p.names[string(inner)]; ok {
		return s
	}
	s := string(inner)
	if len(p.names) < maxNames {
		p.names[s] = s
	}
	return s
}

// Dropped returns how many records the queue had no room for, and how many
// spans were not built because they could not have been exported (the
// collector down, or the export queue full).
func (p *Provider) Dropped() (records, spans uint64) {
	if p == nil {
		return 0, 0
	}
	p.qmu.Lock()
	records = p.dropped
	p.qmu.Unlock()
	return records, p.unbuilt.Load()
}
