package mcpmsg

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hoist-mcp/hoist/jsonrpc"
	"github.com/hoist-mcp/hoist/jsontext"
)

func TestIsModern(t *testing.T) {
	for v, want := range map[string]bool{"2024-11-05": false, "2025-11-25": false, "2026-07-28": true, "2027-01-01": true, "": false} {
		if IsModern(v) != want {
			t.Errorf("IsModern(%q) = %v", v, !want)
		}
	}
}

func TestReadRequestMeta(t *testing.T) {
	for _, tc := range []struct {
		name, params string
		want         RequestMeta
	}{
		{"stateless era", `{"name":"lookup","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"go-sdk","version":"1"},"io.modelcontextprotocol/clientCapabilities":{},"progressToken":7}}`,
			RequestMeta{ProtocolVersion: "2026-07-28", ClientName: "go-sdk", ProgressToken: []byte(`7`)}},
		{"session era", `{"name":"lookup","_meta":{"progressToken":"tok"}}`, RequestMeta{ProgressToken: []byte(`"tok"`)}},
		{"no _meta", `{"name":"lookup"}`, RequestMeta{}},
		{"odd shapes are left out", `{"_meta":{"io.modelcontextprotocol/protocolVersion":20260728,"progressToken":null}}`, RequestMeta{}},
		{"names are exact", `{"_Meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`, RequestMeta{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, ReadRequestMeta([]byte(tc.params))); d != "" {
				t.Errorf("ReadRequestMeta (-want +got):\n%s", d)
			}
		})
	}
}

func TestModernMeta(t *testing.T) {
	m := ModernMeta("2026-07-28")
	if !jsontext.Valid(m) {
		t.Fatalf("ModernMeta is not JSON: %s", m)
	}
	req := AppendToolCallMeta(nil, ProxyID(1), "lookup", []byte(`{"a":1}`), m)
	msg := jsonrpc.Classify(req)
	if got := ReadRequestMeta(msg.Params).ProtocolVersion; got != "2026-07-28" {
		t.Errorf("the lookup's _meta version = %q: %s", got, req)
	}
	if c, ok := CallOf(msg); !ok || c.Name != "lookup" || string(c.Args) != `{"a":1}` {
		t.Errorf("AppendToolCallMeta wrote %s", req)
	}
	if caps, ok := jsontext.Lookup(m, MetaClientCapabilities); !ok || string(caps) != "{}" {
		t.Errorf("the proxy declares capabilities %s, want none", caps)
	}
}

func TestHeaderName(t *testing.T) {
	for _, tc := range []struct {
		method, params, want string
		ok                   bool
	}{
		{"tools/call", `{"name":"get_weather","arguments":{}}`, "get_weather", true},
		{"prompts/get", `{"name":"greet"}`, "greet", true},
		{"resources/read", `{"uri":"file:///x"}`, "file:///x", true},
		{"tools/list", `{}`, "", false},
	} {
		if got, ok := HeaderName(tc.method, []byte(tc.params)); got != tc.want || ok != tc.ok {
			t.Errorf("HeaderName(%s, %s) = %q, %v", tc.method, tc.params, got, ok)
		}
	}
}

func TestInputRequired(t *testing.T) {
	for result, want := range map[string]bool{
		`{"resultType":"input_required","inputRequests":{"a":{"method":"elicitation/create","params":{}}}}`: true,
		`{"resultType":"complete","content":[]}`:                                                            false,
		`{"content":[]}`:                                                                                    false,
		`{"ResultType":"input_required"}`:                                                                   false,
	} {
		if InputRequired([]byte(result)) != want {
			t.Errorf("InputRequired(%s) = %v", result, !want)
		}
	}
	for params, want := range map[string]bool{
		`{"name":"x","arguments":{},"inputResponses":{"a":{"action":"accept"}}}`: true,
		`{"name":"x","arguments":{},"requestState":"s"}`:                         true,
		`{"name":"x","arguments":{"requestState":"s"}}`:                          false,
	} {
		if IsRetry([]byte(params)) != want {
			t.Errorf("IsRetry(%s) = %v", params, !want)
		}
	}
}

func TestReadDiscovered(t *testing.T) {
	in := ReadInitialized([]byte(`{"resultType":"complete","supportedVersions":["2026-07-28","2025-11-25"],"capabilities":{"tools":{}},"instructions":"Look first.","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"retail","version":"2"}}}`))
	if in.ServerName != "retail" || string(in.ServerInfo) != `{"name":"retail","version":"2"}` || in.Instructions != "Look first." ||
		in.ProtocolVersion != "" || !cmp.Equal(in.SupportedVersions, []string{"2026-07-28", "2025-11-25"}) {
		t.Errorf("ReadInitialized(server/discover result) = %+v", in)
	}
	if KindOfResult([]byte(`{"supportedVersions":[]}`)) != ServerResult {
		t.Error("a server/discover result describes the server")
	}
}

func TestAppendErrorObject(t *testing.T) {
	got := AppendErrorObject(nil, []byte(`"q-1"`), []byte(`{"code":-32022,"message":"Unsupported protocol version","data":{"supported":["2025-11-25"]}}`))
	m := jsonrpc.Classify(got)
	if m.Kind != jsonrpc.Response || string(m.ID) != `"q-1"` || ResultOf(m).Text() != "Unsupported protocol version" || !jsontext.Valid(got) {
		t.Errorf("AppendErrorObject wrote %s", got)
	}
}

func TestAppendCancelled(t *testing.T) {
	got := AppendCancelled(nil, []byte(`"q-2"`), "stream closed")
	m := jsonrpc.Classify(got)
	if m.Kind != jsonrpc.Notification || m.Method != MethodCancelled || string(CancelledID(m.Params)) != `"q-2"` {
		t.Errorf("AppendCancelled wrote %s", got)
	}
}

func TestHeaderParams(t *testing.T) {
	schema := []byte(`{"type":"object","properties":{
		"region":{"type":"string","x-mcp-header":"Region"},
		"query":{"type":"string"},
		"opts":{"type":"object","properties":{"tenant":{"type":"integer","x-mcp-header":"Tenant"}}},
		"list":{"type":"array","items":{"type":"object","properties":{"x":{"type":"string","x-mcp-header":"X"}}}},
		"bad":{"type":"string","x-mcp-header":"has space"}}}`)
	got := HeaderParams(schema)
	want := []HeaderParam{{Header: "Region", Path: []string{"region"}}, {Header: "Tenant", Path: []string{"opts", "tenant"}}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("HeaderParams (-want +got):\n%s", d)
	}
	args := []byte(`{"region":"us-west1","opts":{"tenant":42},"flag":true,"f":1.5,"n":null}`)
	for _, tc := range []struct {
		path []string
		want string
		ok   bool
	}{
		{[]string{"region"}, "us-west1", true},
		{[]string{"opts", "tenant"}, "42", true},
		{[]string{"flag"}, "true", true},
		{[]string{"f"}, "", false},
		{[]string{"n"}, "", false},
		{[]string{"missing"}, "", false},
		{[]string{"region", "deeper"}, "", false},
	} {
		if v, ok := HeaderValue(args, tc.path); v != tc.want || ok != tc.ok {
			t.Errorf("HeaderValue(%v) = %q, %v", tc.path, v, ok)
		}
	}
}
