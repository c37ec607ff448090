package proxy_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hoist-mcp/hoist/internal/testbin"
)

// The --otel tests send the proxy's traces to a real receiver, Jaeger v2
// (the jaeger program, built from internal/tools/jaeger), and read them
// back through its query API (docs/telemetry.md).

// jaegerConfig is an all-in-one Jaeger on loopback ports of the test's
// choosing: OTLP over HTTP in, the query API out, spans kept in memory.
const jaegerConfig = `service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  jaeger_query:
    storage:
      traces: mem
    http:
      endpoint: 127.0.0.1:${env:HOIST_JAEGER_QUERY}
    grpc:
      endpoint: 127.0.0.1:${env:HOIST_JAEGER_QUERY_GRPC}
  jaeger_storage:
    backends:
      mem:
        memory:
          max_traces: 10000
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:${env:HOIST_JAEGER_OTLP}
processors:
  batch:
    timeout: 50ms
exporters:
  jaeger_storage_exporter:
    trace_storage: mem
`

// jaeger is a running Jaeger: where the proxy sends (OTLP) and where the
// test asks (query).
type jaeger struct {
	otlp, query string
}

// startJaeger starts Jaeger for the test and waits until both its ports
// answer. Its ports are chosen free just before it starts, so another
// test's server may take one first: Jaeger then exits saying the address
// is in use, and it is started again on other ports.
func startJaeger(t *testing.T) *jaeger {
	t.Helper()
	bin := testbin.Jaeger(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "jaeger.yaml")
	if err := os.WriteFile(cfg, []byte(jaegerConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	for attempt := 1; ; attempt++ {
		j, logs := tryJaeger(t, bin, cfg)
		if j != nil {
			return j
		}
		if attempt == 5 || !strings.Contains(logs, "address already in use") {
			t.Fatalf("jaeger exited:\n%s", logs)
		}
	}
}

// tryJaeger starts Jaeger on ports free a moment before, and returns it
// once both its ports answer, or nil and its output if it exited first.
func tryJaeger(t *testing.T, bin, cfg string) (*jaeger, string) {
	t.Helper()
	otlp, query, grpc := freePort(t), freePort(t), freePort(t)
	cmd := exec.Command(bin, "--config", "file:"+cfg)
	cmd.Env = testbin.Env("HOIST_JAEGER_OTLP="+otlp, "HOIST_JAEGER_QUERY="+query, "HOIST_JAEGER_QUERY_GRPC="+grpc)
	logs := newSyncBuffer()
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	})
	j := &jaeger{otlp: "http://127.0.0.1:" + otlp, query: "http://127.0.0.1:" + query}
	// Ready once the query API answers and the OTLP port takes connections.
	for i := 0; ; i++ {
		select {
		case <-exited:
			return nil, logs.String()
		default:
		}
		resp, err := http.Get(j.query + "/api/services")
		if err == nil {
			resp.Body.Close()
			if c, err := net.Dial("tcp", "127.0.0.1:"+otlp); err == nil {
				c.Close()
				return j, ""
			}
		}
		if i == 600 {
			t.Fatalf("jaeger did not come up in 60s:\n%s", logs)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// env is the proxy's environment to export to j as service.
func (j *jaeger) env(service string) []string {
	return []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + j.otlp, "OTEL_SERVICE_NAME=" + service, "OTEL_METRICS_EXPORTER=none"}
}

// jSpan is a span as Jaeger's query API returns it.
type jSpan struct {
	TraceID       string `json:"traceID"`
	SpanID        string `json:"spanID"`
	OperationName string `json:"operationName"`
	References    []struct {
		RefType string `json:"refType"`
		TraceID string `json:"traceID"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	Tags []struct {
		Key   string `json:"key"`
		Value any    `json:"value"`
	} `json:"tags"`
	Logs []struct {
		Fields []struct {
			Key   string `json:"key"`
			Value any    `json:"value"`
		} `json:"fields"`
	} `json:"logs"`
}

func (s jSpan) tag(key string) string {
	for _, t := range s.Tags {
		if t.Key == key {
			return fmt.Sprint(t.Value)
		}
	}
	return ""
}

// parent returns the span id of the span's CHILD_OF reference, or "".
func (s jSpan) parent() string {
	for _, r := range s.References {
		if r.RefType == "CHILD_OF" {
			return r.SpanID
		}
	}
	return ""
}

// events returns the names of the span's events, in order, with each
// event's fields.
func (s jSpan) events() []map[string]string {
	var out []map[string]string
	for _, l := range s.Logs {
		m := map[string]string{}
		for _, f := range l.Fields {
			m[f.Key] = fmt.Sprint(f.Value)
		}
		out = append(out, m)
	}
	return out
}

// spans asks Jaeger for the service's spans until at least want of them
// are there (export is batched, and Jaeger stores what it received a
// moment later): a bounded poll, not a sleep.
func (j *jaeger) spans(t *testing.T, service string, want int) []jSpan {
	t.Helper()
	var got []jSpan
	for i := 0; i < 300; i++ {
		got = got[:0]
		resp, err := http.Get(j.query + "/api/traces?limit=1000&lookback=1h&service=" + url.QueryEscape(service))
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Data []struct {
				Spans []jSpan `json:"spans"`
			} `json:"data"`
		}
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, tr := range body.Data {
			got = append(got, tr.Spans...)
		}
		if len(got) >= want {
			return got
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("Jaeger has %d span(s) of %s, want %d: %+v", len(got), service, want, got)
	return nil
}

// named returns the spans called name.
func named(spans []jSpan, name string) []jSpan {
	var out []jSpan
	for _, s := range spans {
		if s.OperationName == name {
			out = append(out, s)
		}
	}
	return out
}

// Host spans carry a traceparent the tests chose.
const (
	hostTrace  = "4bf92f3577b34da6a3ce929d0e0e4736"
	hostParent = "00f067aa0ba902b7"
)

// TestOtelJaegerFlow serves a flow in front of the demo with --otel and
// reads the session back from Jaeger: a span per request, named and
// attributed by the MCP conventions, the host's traceparent honoured, the
// flow's lookup a child of the call it followed, and the flow's decisions
// events on that call.
func TestOtelJaegerFlow(t *testing.T) {
	t.Parallel()
	j := startJaeger(t)
	service := "hoist-flow-" + t.Name()
	p, _ := served(t, j.env(service), "--otel")
	p.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"lookup","arguments":{"text":"a","next":"b"},"_meta":{"traceparent":"00-` + hostTrace + `-` + hostParent + `-01"}}}` + "\n")
	if item := lookedUp(t, p.readLine()); item == "" {
		t.Fatal("the flow looked nothing up")
	}
	if rest, code := p.finish(); code != 0 || rest != "" {
		t.Fatalf("exit %d, more output %q; stderr:\n%s", code, rest, p.stderr)
	}

	spans := j.spans(t, service, 4) // initialize, tools/list, the call, its lookup
	if n := len(named(spans, "initialize")); n != 1 {
		t.Errorf("%d initialize spans", n)
	}
	init := named(spans, "initialize")[0]
	if v := init.tag("mcp.protocol.version"); v != "2025-06-18" {
		t.Errorf("initialize: mcp.protocol.version %q", v)
	}
	calls := named(spans, "tools/call lookup")
	if len(calls) != 2 {
		t.Fatalf("want the agent's call and the flow's lookup, got %+v", calls)
	}
	call, look := calls[0], calls[1]
	if call.tag("hoist.lookup") == "true" {
		call, look = look, call
	}
	for k, want := range map[string]string{
		"mcp.method.name": "tools/call", "gen_ai.tool.name": "lookup", "jsonrpc.request.id": "3",
		"mcp.protocol.version": "2025-06-18", "network.transport": "pipe", "span.kind": "server",
	} {
		if got := call.tag(k); got != want {
			t.Errorf("the call's %s = %q, want %q", k, got, want)
		}
	}
	if call.tag("mcp.session.id") == "" || call.tag("mcp.session.id") != init.tag("mcp.session.id") {
		t.Errorf("mcp.session.id %q, initialize's %q", call.tag("mcp.session.id"), init.tag("mcp.session.id"))
	}
	if call.TraceID != hostTrace || call.parent() != hostParent {
		t.Errorf("the call is in trace %s under %s, want the host's traceparent %s/%s", call.TraceID, call.parent(), hostTrace, hostParent)
	}
	if look.TraceID != call.TraceID || look.parent() != call.SpanID {
		t.Errorf("the lookup is in trace %s under %s, want under the call %s", look.TraceID, look.parent(), call.SpanID)
	}
	if look.tag("span.kind") != "client" || look.tag("jsonrpc.request.id") != "hoist-1" {
		t.Errorf("lookup tags %+v", look.Tags)
	}
	var names []string
	for _, e := range call.events() {
		names = append(names, e["event"])
	}
	if len(names) < 2 || names[0] != "hoist.flow.decision" || names[len(names)-1] != "hoist.flow.run" {
		t.Errorf("the call's events %v, want the flow's decisions then its run", names)
	}
	if d := call.events()[0]; d["hoist.site"] != "decide#0" {
		t.Errorf("decision event %v", d)
	}
}

// TestOtelBytesUnchanged: a traceparent in params._meta parents the span,
// and the server gets the host's bytes exactly as sent.
func TestOtelBytesUnchanged(t *testing.T) {
	t.Parallel()
	j := startJaeger(t)
	service := "hoist-bytes-" + t.Name()
	tee := filepath.Join(t.TempDir(), "tee")
	cmd, env := fake("echo", "HOIST_FAKE_TEE="+tee)
	p := startProxy(t, append(env, j.env(service)...), append([]string{"--otel", "--"}, cmd...)...)
	sent := `{"jsonrpc":"2.0","id":"q-1","method":"tools/call","params":{"name":"x", "arguments":{"a":1.50},"_meta":{"tracestate":"k=v","traceparent":"00-` + hostTrace + `-` + hostParent + `-01"}}}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"ping"}` + "\r\n"
	p.send(sent)
	p.readLine()
	p.readLine()
	if _, code := p.finish(); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, p.stderr)
	}
	got, err := os.ReadFile(tee)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != sent {
		t.Errorf("the server read\n%q\nthe host sent\n%q", got, sent)
	}
	spans := j.spans(t, service, 2)
	x := named(spans, "tools/call x")
	if len(x) != 1 || x[0].TraceID != hostTrace || x[0].parent() != hostParent || x[0].tag("jsonrpc.request.id") != "q-1" {
		t.Errorf("spans %+v", spans)
	}
}

// TestOtelListen traces --listen sessions: the transport is tcp, the
// session the Mcp-Session-Id the host was given, a JSON-RPC error's code
// the span's error.type, and a traceparent header on the POST the parent
// of its request's span, unless the request's params._meta names one.
func TestOtelListen(t *testing.T) {
	t.Parallel()
	j := startJaeger(t)
	service := "hoist-listen-" + t.Name()
	p := startProxy(t, j.env(service), "--otel", "--listen", "127.0.0.1:0", "--", testbin.Build(t, "hoist-mcp-demo"))
	l := &listenProc{proc: p, url: strings.TrimSpace(p.readLine())}
	r := l.do("POST", tryIt[0], jsonOnly)
	sid := r.header.Get("Mcp-Session-Id")
	if r.status != 200 || sid == "" {
		t.Fatalf("initialize: %d %s", r.status, r.body)
	}
	withSession := func(req *http.Request) {
		jsonOnly(req)
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	l.do("POST", tryIt[1], withSession)
	if r := l.do("POST", `{"jsonrpc":"2.0","id":5,"method":"no/such/method"}`, withSession); !strings.Contains(r.body, `"error"`) {
		t.Fatalf("want an error for an unknown method, got %d %s", r.status, r.body)
	}
	const headerTrace, headerParent = "5af7651916cd43dd8448eb211c80319c", "a7ad6b7169203331"
	withTrace := func(req *http.Request) {
		withSession(req)
		req.Header.Set("traceparent", "00-"+headerTrace+"-"+headerParent+"-01")
		req.Header.Set("tracestate", "k=v")
	}
	if r := l.do("POST", tryIt[2], withTrace); r.status != 200 {
		t.Fatalf("tools/list: %d %s", r.status, r.body)
	}
	ping := `{"jsonrpc":"2.0","id":6,"method":"ping","params":{"_meta":{"traceparent":"00-` + hostTrace + `-` + hostParent + `-01"}}}`
	if r := l.do("POST", ping, withTrace); r.status != 200 {
		t.Fatalf("ping: %d %s", r.status, r.body)
	}
	l.cmd.Process.Signal(syscall.SIGTERM)
	if code := l.wait(); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, p.stderr)
	}
	spans := j.spans(t, service, 4)
	if list := named(spans, "tools/list"); len(list) != 1 || list[0].TraceID != headerTrace || list[0].parent() != headerParent {
		t.Errorf("tools/list under a traceparent header: %+v, want trace %s, parent %s", list, headerTrace, headerParent)
	}
	if pings := named(spans, "ping"); len(pings) != 1 || pings[0].TraceID != hostTrace || pings[0].parent() != hostParent {
		t.Errorf("ping with a traceparent in _meta and in the header: %+v, want _meta's: trace %s, parent %s", pings, hostTrace, hostParent)
	}
	bad := named(spans, "no/such/method")
	if len(bad) != 1 {
		t.Fatalf("spans %+v", spans)
	}
	for k, want := range map[string]string{"network.transport": "tcp", "mcp.session.id": sid, "error.type": "-32601", "mcp.protocol.version": "2025-06-18"} {
		if got := bad[0].tag(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
}

// TestOtelUpstream traces a session proxied to a Streamable HTTP server,
// with the flow's lookup under the call.
func TestOtelUpstream(t *testing.T) {
	t.Parallel()
	j := startJaeger(t)
	service := "hoist-upstream-" + t.Name()
	p := startProxy(t, j.env(service), "--otel", "--flow", demoFlow, "--upstream", startDemoHTTP(t))
	p.send(tryIt[0]+"\n", tryIt[1]+"\n", tryIt[2]+"\n")
	p.readLine()
	p.readLine()
	p.send(call(3, `{"text":"a","next":"b"}`))
	if item := lookedUp(t, p.readLine()); item == "" {
		t.Fatal("the flow looked nothing up")
	}
	if _, code := p.finish(); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, p.stderr)
	}
	calls := named(j.spans(t, service, 4), "tools/call lookup")
	if len(calls) != 2 {
		t.Fatalf("calls %+v", calls)
	}
	call, look := calls[0], calls[1]
	if call.tag("hoist.lookup") == "true" {
		call, look = look, call
	}
	if look.parent() != call.SpanID || call.tag("network.transport") != "pipe" {
		t.Errorf("call %+v\nlookup %+v", call, look)
	}
}

// TestOtelCollectorDown: a collector that is not there costs the session
// nothing: every answer comes, and the proxy exits with the server. The
// export headers, well formed or not, never reach stderr.
func TestOtelCollectorDown(t *testing.T) {
	t.Parallel()
	for _, headers := range []string{"authorization=Bearer%20s3cret-token", "authorization Bearer s3cret-token,x=%zz-s3cret"} {
		t.Run(headers, func(t *testing.T) { collectorDown(t, headers) })
	}
}

func collectorDown(t *testing.T, headers string) {
	env := []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:" + freePort(t), "OTEL_EXPORTER_OTLP_HEADERS=" + headers}
	p := startProxy(t, env, "--otel", "--", testbin.Build(t, "hoist-mcp-demo"))
	p.send(tryIt[0]+"\n", tryIt[1]+"\n", tryIt[2]+"\n", tryIt[3]+"\n")
	for range 3 {
		if l := p.readLine(); !strings.Contains(l, `"result"`) {
			t.Fatalf("answer %q", l)
		}
	}
	if _, code := p.finish(); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, p.stderr)
	}
	if strings.Contains(p.stderr.String(), "s3cret") {
		t.Errorf("the exporter's header reached stderr:\n%s", p.stderr)
	}
}

// TestOtelGuards: a write the guards refuse is a span whose error.type is
// tool_error, with the guards' verdicts as an event on it, though no
// guards log is kept on disk (no --record, no --guards-log).
func TestOtelGuards(t *testing.T) {
	t.Parallel()
	j := startJaeger(t)
	service := "hoist-guards-" + t.Name()
	p, _, _, _ := openShop(t, j.env(service), "--otel", "--domain", "retail", "--guards")
	p.send(toolCall(3, "find_user_id_by_email", `{"email":"c7@example.com"}`))
	p.readLine()
	p.send(toolCall(5, "cancel_pending_order", `{"order_id":"#W7a","reason":"found it cheaper"}`))
	if got := p.readLine(); got != refusedReason {
		t.Fatalf("the agent got\n%s\nwant\n%s", got, refusedReason)
	}
	if _, code := p.finish(); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, p.stderr)
	}
	cancels := named(j.spans(t, service, 4), "tools/call cancel_pending_order")
	if len(cancels) != 1 {
		t.Fatalf("cancel spans %+v", cancels)
	}
	c := cancels[0]
	if c.tag("error.type") != "tool_error" || c.tag("jsonrpc.request.id") != "5" {
		t.Errorf("the refused write's tags %+v", c.Tags)
	}
	evs := c.events()
	if len(evs) != 1 || evs[0]["event"] != "hoist.guards.check" || evs[0]["hoist.refused"] != "retail.cancel_reason" || evs[0]["hoist.tool"] != "cancel_pending_order" {
		t.Fatalf("the refused write's events %v", evs)
	}
	if _, ok := evs[0]["hoist.arguments"]; ok {
		t.Errorf("the call's arguments are in its event: %v", evs[0])
	}
}
