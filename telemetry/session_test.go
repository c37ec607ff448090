package telemetry

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

func start(t *testing.T) (*Provider, *tracetest.InMemoryExporter, *sdkmetric.ManualReader) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	reader := sdkmetric.NewManualReader()
	p, err := Start(context.Background(), Config{Version: "test", SpanExporter: exp, MetricReader: reader, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	return p, exp, reader
}

func attrs(kv []attribute.KeyValue) map[string]string {
	m := map[string]string{}
	for _, a := range kv {
		m[string(a.Key)] = a.Value.String()
	}
	return m
}

// TestSessionSpans drives a Session through a session's lines and reads
// the spans the SDK exports: names, attributes, the host's traceparent as
// parent, a lookup as the child of its call, events on the call, errors.
func TestSessionSpans(t *testing.T) {
	p, exp, _ := start(t)
	s := p.Session("sess-1", Pipe)
	s.FromHost([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`))
	s.FromServer([]byte(`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-03-26","capabilities":{},"serverInfo":{"name":"s","version":"0"}}}`), true)
	s.FromHost([]byte(`{"jsonrpc":"2.0","id":"c-2","method":"tools/call","params":{"name":"get_order","arguments":{"id":"7"},"_meta":{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01","tracestate":"k=v"}}}`))
	s.FromServer([]byte(`{"jsonrpc":"2.0","id":"c-2","result":{"content":[]}}`), false) // held: not delivered
	s.Event("flow", []byte(`{"type":"decision","call":"get_order","taken":0,"args":{"secret":"x"},"scores":[0.5]}`))
	s.Lookup([]byte(`{"jsonrpc":"2.0","id":"hoist-1","method":"tools/call","params":{"name":"get_user","arguments":{}}}` + "\n"))
	s.FromServer([]byte(`{"jsonrpc":"2.0","id":"hoist-1","result":{"content":[],"isError":true}}`), false)
	s.Hold([]byte(`"c-2"`), "after", "tools/call", "breakpoint", "")
	s.ToHost([]byte(`{"jsonrpc":"2.0","id":"c-2","result":{"content":[]}}` + "\n"))
	s.FromHost([]byte(`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`))
	s.ToHost([]byte(`{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"no"}}`))
	s.FromHost([]byte(`{"jsonrpc":"2.0","id":4,"method":"ping"}`))
	s.Close()
	if err := p.tp.ForceFlush(context.Background()); err != nil { // Shutdown would empty the exporter
		t.Fatal(err)
	}
	defer p.Shutdown(0)
	spans := exp.GetSpans()
	byName := map[string]tracetest.SpanStub{}
	for _, sp := range spans {
		byName[sp.Name] = sp
	}
	if len(spans) != 5 {
		t.Fatalf("got %d spans, want 5: %v", len(spans), byName)
	}
	init := byName["initialize"]
	if a := attrs(init.Attributes); a["mcp.protocol.version"] != "2025-03-26" || a["mcp.session.id"] != "sess-1" || a["network.transport"] != "pipe" || a["jsonrpc.request.id"] != "1" {
		t.Errorf("initialize attributes %v", a)
	}
	call := byName["tools/call get_order"]
	a := attrs(call.Attributes)
	if a["gen_ai.tool.name"] != "get_order" || a["jsonrpc.request.id"] != "c-2" || a["mcp.method.name"] != "tools/call" || a["mcp.protocol.version"] != "2025-03-26" {
		t.Errorf("call attributes %v", a)
	}
	if got := call.SpanContext.TraceID().String(); got != "0af7651916cd43dd8448eb211c80319c" {
		t.Errorf("call's trace %s, want the host's traceparent's", got)
	}
	if got := call.Parent.SpanID().String(); got != "b7ad6b7169203331" || !call.Parent.IsRemote() {
		t.Errorf("call's parent %s, want the host's span", got)
	}
	if call.SpanContext.TraceState().Get("k") != "v" {
		t.Errorf("tracestate %v not carried", call.SpanContext.TraceState())
	}
	if len(call.Events) != 2 || call.Events[0].Name != "hoist.flow.decision" || call.Events[1].Name != "hoist.console.hold" {
		t.Fatalf("call events %+v", call.Events)
	}
	ev := attrs(call.Events[0].Attributes)
	if ev["hoist.call"] != "get_order" || ev["hoist.scores"] != "[0.5]" || ev["hoist.args"] != "" || ev["hoist.taken"] != "0" {
		t.Errorf("decision event attributes %v", ev)
	}
	look := byName["tools/call get_user"]
	if look.Parent.SpanID() != call.SpanContext.SpanID() || look.SpanContext.TraceID() != call.SpanContext.TraceID() {
		t.Errorf("lookup's parent %v, want the call %v", look.Parent.SpanID(), call.SpanContext.SpanID())
	}
	if la := attrs(look.Attributes); la["hoist.lookup"] != "true" || la["error.type"] != "tool_error" {
		t.Errorf("lookup attributes %v", la)
	}
	if look.EndTime.After(call.EndTime) {
		t.Error("the lookup ended after the call it followed")
	}
	list := byName["tools/list"]
	if la := attrs(list.Attributes); la["error.type"] != "-32601" || la["rpc.response.status_code"] != "-32601" {
		t.Errorf("tools/list attributes %v", la)
	}
	if pa := attrs(byName["ping"].Attributes); pa["hoist.unanswered"] != "true" {
		t.Errorf("ping attributes %v", pa)
	}
}

// TestOperationDuration reads the metric of a session's requests.
func TestOperationDuration(t *testing.T) {
	p, _, reader := start(t)
	s := p.Session("s", TCP)
	s.FromHost([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"lookup","arguments":{}}}`))
	s.FromServer([]byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`), true)
	s.FromHost([]byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"lookup","arguments":{}}}`))
	s.FromServer([]byte(`{"jsonrpc":"2.0","id":2,"result":{"content":[]}}`), true)
	s.Close() // the worker has handled every line
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != "mcp.server.operation.duration" {
				continue
			}
			found = true
			if m.Unit != "s" {
				t.Errorf("unit %q", m.Unit)
			}
			h := m.Data.(metricdata.Histogram[float64])
			if len(h.DataPoints) != 1 || h.DataPoints[0].Count != 2 {
				t.Fatalf("data points %+v", h.DataPoints)
			}
			set := h.DataPoints[0].Attributes
			for k, want := range map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "lookup", "network.transport": "tcp"} {
				if v, ok := set.Value(attribute.Key(k)); !ok || v.String() != want {
					t.Errorf("%s = %q, want %q", k, v.String(), want)
				}
			}
		}
	}
	if !found {
		t.Fatalf("no mcp.server.operation.duration in %+v", rm)
	}
	p.Shutdown(0)
}

// TestNilSession is how the proxy runs without --otel.
func TestNilSession(t *testing.T) {
	var p *Provider
	s := p.Session("x", Pipe)
	s.FromHost([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	s.FromServer([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`), true)
	s.ToHost(nil)
	s.Lookup(nil)
	s.Event("flow", []byte(`{}`))
	s.Hold(nil, "", "", "", "")
	s.Close()
	if err := p.Shutdown(0); err != nil {
		t.Fatal(err)
	}
}

// TestNotJSON feeds the readers lines that are not JSON, or cut short: no
// panic escapes and no read runs on (such a line may make a span with odd
// attributes; it is never forwarded any differently).
func TestNotJSON(t *testing.T) {
	p, _, _ := start(t)
	s := p.Session("s", Pipe)
	whole := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":[1,{"b":"c\"d"}]},"_meta":{"traceparent":"00-` + "0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" + `"}}}`
	for i := range len(whole) {
		for _, line := range []string{whole[:i], whole[i:], whole[:i] + "," + whole[i:], whole[:i] + "}" + whole[i:]} {
			done := make(chan struct{})
			go func() {
				defer close(done)
				s.FromHost([]byte(line))
				s.FromServer([]byte(line), true)
				s.ToHost([]byte(line))
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("reading %q did not end", line)
			}
		}
	}
	s.Close()
	p.Shutdown(0)
}

// TestHTTPParent: an HTTP request's traceparent and tracestate parent a
// request whose _meta names no traceparent; one in _meta wins.
func TestHTTPParent(t *testing.T) {
	p, exp, _ := start(t)
	s := p.Session("s", TCP)
	const header = "00-5af7651916cd43dd8448eb211c80319c-a7ad6b7169203331-01"
	s.FromHostHTTP([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"progressToken":1}}}`), header, "k=v")
	s.FromHostHTTP([]byte(`{"jsonrpc":"2.0","id":2,"method":"ping","params":{"_meta":{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}}`), header, "k=v")
	s.Close()
	if err := p.tp.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown(0)
	for _, sp := range exp.GetSpans() {
		want, state := "5af7651916cd43dd8448eb211c80319c", "v"
		if sp.Name == "ping" {
			want, state = "0af7651916cd43dd8448eb211c80319c", ""
		}
		if got := sp.SpanContext.TraceID().String(); got != want {
			t.Errorf("%s: trace %s, want %s", sp.Name, got, want)
		}
		if got := sp.SpanContext.TraceState().Get("k"); got != state {
			t.Errorf("%s: tracestate k=%q, want %q", sp.Name, got, state)
		}
	}
	if n := len(exp.GetSpans()); n != 2 {
		t.Errorf("%d spans, want 2", n)
	}
}
