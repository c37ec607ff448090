package telemetry

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/hoist-mcp/hoist/mcpmsg"
)

// The building side: one goroutine takes the queued records every
// BuildWait (or when half of MaxRecords wait) and builds from them, in the
// order they were noted, the spans with the records' timestamps and the
// metric with the durations between them. A session's records are noted
// in the order its lines were seen, so a lookup's start follows the call
// it is the child of, and an event the request it is about, as when the
// spans were built at once.
//
// While a span built now could not be exported (the collector is down and
// the export paused, or the export queue is full), its record builds no
// span: the span would be dropped unsent, and building it would cost the
// proxy's CPU for nothing. The metric is still recorded. When the pause
// ends, the first spans built try the collector at once (batch.go), so
// that while it stays down few spans are built for nothing.

// noSpan is the span of a call while spans are not built: it records
// nothing.
var noSpan = trace.SpanFromContext(context.Background())

// loop builds the queued records every BuildWait, or when kicked.
func (p *Provider) loop() {
	defer close(p.loopDone)
	tick := time.NewTicker(BuildWait)
	defer tick.Stop()
	for {
		select {
		case <-p.loopStop:
			return
		case <-tick.C:
		case <-p.kick:
		}
		p.build()
	}
}

// build builds every record queued so far.
func (p *Provider) build() {
	defer func() { recover() }()
	p.building.Lock()
	defer p.building.Unlock()
	p.qmu.Lock()
	recs := p.queue
	p.queue = p.spare[:0]
	p.qmu.Unlock()
	if len(recs) == 0 {
		p.spare = recs
		return
	}
	shed := p.shed()
	for i := range recs {
		p.buildOne(&recs[i], shed)
	}
	clear(recs)
	p.spare = recs[:0]
}

// shed reports whether a span built now would be dropped unsent: traces
// are off (OTEL_TRACES_EXPORTER=none), the export is paused, or its queue
// is full.
func (p *Provider) shed() bool {
	if p.batch == nil || p.down.paused() {
		return true
	}
	return p.batch.full()
}

func (p *Provider) buildOne(r *record, shed bool) {
	defer func() { recover() }() // a record of odd bytes builds no span
	s := r.s
	if s.closed {
		return
	}
	switch r.what {
	case recStart:
		s.start(r, shed)
	case recEnd:
		s.end(r)
	case recEvent:
		s.event(r.x.kind, r.x.line, r.at)
	case recHold:
		var id []byte
		if r.host {
			id = r.id.raw()
		}
		s.hold(id, r.x.hold, r.at)
	case recClose:
		s.close(r.at)
	}
}

// start begins the span of the request r noted.
func (s *Session) start(r *record, shed bool) {
	method, tool, own := r.method, r.tool, r.own
	if method == mcpmsg.MethodInitialize && !own && r.version != "" && s.version == "" {
		s.version = r.version
	}
	c := &call{ctx: context.Background(), span: noSpan, start: r.at, method: method, tool: tool, own: own}
	if shed {
		s.p.unbuilt.Add(1)
	} else {
		name := method
		attrs := make([]attribute.KeyValue, 0, 9)
		attrs = append(attrs,
			semconv.McpMethodNameKey.String(method),
			semconv.JSONRPCRequestID(requestID(r.id.raw())),
			semconv.NetworkTransportKey.String(s.transport))
		if s.id != "" {
			attrs = append(attrs, semconv.McpSessionIDKey.String(s.id))
		}
		if method == mcpmsg.MethodToolsCall {
			name += " " + tool
			attrs = append(attrs, semconv.GenAIToolName(tool), semconv.GenAIOperationNameExecuteTool)
		}
		if own {
			attrs = append(attrs, AttrLookup.Bool(true))
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
			ctx = s.parent(r)
		}
		c.ctx, c.span = s.p.tracer.Start(ctx, name, trace.WithSpanKind(kind), trace.WithTimestamp(r.at), trace.WithAttributes(attrs...))
	}
	in := s.calls
	if own {
		in = s.own
	}
	if old := in[r.id]; old != nil {
		// An id used again before its answer: the first is left without.
		s.finish(old, r.at, true)
	}
	in[r.id] = c
	if !own && method == mcpmsg.MethodToolsCall {
		s.last = c
	}
}

// parent returns the context the traceparent (and tracestate) of a
// request's params._meta carries, or the background.
func (s *Session) parent(r *record) context.Context {
	ctx := context.Background()
	tp := r.traceparent()
	if tp == "" {
		return ctx
	}
	carrier := propagation.MapCarrier{"traceparent": tp}
	if r.x != nil && r.x.tracestate != "" {
		carrier["tracestate"] = r.x.tracestate
	}
	return s.p.prop.Extract(ctx, carrier)
}

// end ends the span of the request the response r noted answers: the
// proxy's own when r came from the server, the host's when it reaches the
// host.
func (s *Session) end(r *record) {
	var c *call
	if r.own {
		if c = s.own[r.id]; c != nil {
			delete(s.own, r.id)
		}
	}
	if c == nil && r.host {
		if c = s.calls[r.id]; c != nil {
			delete(s.calls, r.id)
		}
	}
	if c == nil {
		return
	}
	if c.method == mcpmsg.MethodInitialize && !c.own && r.result && r.version != "" {
		s.version = r.version
		c.span.SetAttributes(semconv.McpProtocolVersionKey.String(r.version))
	}
	var errType string
	switch {
	case r.x != nil && r.x.hasError:
		errType = r.x.code
		c.span.SetAttributes(semconv.RPCResponseStatusCode(r.x.code))
		c.span.SetStatus(codes.Error, r.x.message)
	case c.method == mcpmsg.MethodToolsCall && r.result && r.isError:
		errType = ErrorTool
		c.span.SetStatus(codes.Error, "the tool's result has isError")
	}
	if errType != "" {
		c.span.SetAttributes(semconv.ErrorTypeKey.String(errType))
	}
	s.record(c, r.at, errType)
	c.done = true
	c.span.End(trace.WithTimestamp(r.at))
}

// record records the request's duration: mcp.server.operation.duration for
// the host's, mcp.client.operation.duration for the proxy's own. The
// attribute sets are few (a method, a tool, a version, an error) and kept.
func (s *Session) record(c *call, now time.Time, errType string) {
	d := now.Sub(c.start).Seconds()
	key := setKey{c.own, c.method, c.tool, s.version, errType, s.transport}
	opt, ok := s.p.sets[key]
	if !ok {
		attrs := make([]attribute.KeyValue, 0, 5)
		attrs = append(attrs, semconv.McpMethodNameKey.String(c.method), semconv.NetworkTransportKey.String(s.transport))
		if c.tool != "" {
			attrs = append(attrs, semconv.GenAIToolName(c.tool))
		}
		if s.version != "" {
			attrs = append(attrs, semconv.McpProtocolVersionKey.String(s.version))
		}
		if errType != "" {
			attrs = append(attrs, semconv.ErrorTypeKey.String(errType))
		}
		opt = metric.WithAttributeSet(attribute.NewSet(attrs...))
		if len(s.p.sets) < maxSets {
			s.p.sets[key] = opt
		}
	}
	h := s.p.server.Inst()
	if c.own {
		h = s.p.client.Inst()
	}
	h.Record(context.Background(), d, opt)
}

// maxSets bounds the kept attribute sets of the metrics.
const maxSets = 4096

// setKey names a kept attribute set of the metrics.
type setKey struct {
	own                                    bool
	method, tool, version, errT, transport string
}

// finish ends c without an answer (the id was used again, or the session
// ended): its span says so.
func (s *Session) finish(c *call, now time.Time, unanswered bool) {
	if c.done {
		return
	}
	c.done = true
	c.span.SetAttributes(AttrUnanswered.Bool(unanswered))
	c.span.End(trace.WithTimestamp(now))
}

// close ends the spans of the requests still unanswered.
func (s *Session) close(now time.Time) {
	for k, c := range s.calls {
		s.finish(c, now, true)
		delete(s.calls, k)
	}
	for k, c := range s.own {
		s.finish(c, now, true)
		delete(s.own, k)
	}
	s.last = nil
	s.closed = true
}

// note adds an event to the span of the host's request id, else of the
// host's latest tools/call.
func (s *Session) note(id []byte, name string, attrs []attribute.KeyValue, at time.Time) {
	c := s.last
	if id != nil {
		if byID := s.calls[makeID(id)]; byID != nil {
			c = byID
		}
	}
	if c != nil {
		c.span.AddEvent(name, trace.WithAttributes(attrs...), trace.WithTimestamp(at))
	}
}
