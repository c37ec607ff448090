package mcpmsg

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hoist-mcp/hoist/jsonrpc"
	"github.com/hoist-mcp/hoist/jsontext"
)

func TestResultOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		line string
		want Result
	}{
		{"text items joined", `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a"},{"type":"image","data":"x"},{"type":"text","text":"b\nc"}]}}`,
			Result{Texts: []string{"a", "b\nc"}}},
		{"isError", `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"Error: no"}],"isError":true}}`,
			Result{Texts: []string{"Error: no"}, IsError: true}},
		{"structured", `{"jsonrpc":"2.0","id":1,"result":{"content":[],"structuredContent":{"n":1}}}`,
			Result{Texts: []string{}, Structured: json.RawMessage(`{"n":1}`)}},
		{"JSON-RPC error", `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Unknown tool"}}`,
			Result{Texts: []string{"Unknown tool"}, IsError: true, RPCError: true}},
		{"error null beside a result", `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"ok"}]},"error":null}`,
			Result{Texts: []string{"ok"}}},
		{"odd items skipped, not the others", `{"jsonrpc":"2.0","id":1,"result":{"content":[7,{"type":"text","text":5},{"type":"text","text":"kept"}],"isError":"yes"}}`,
			Result{Texts: []string{"kept"}}},
		{"names are exact", `{"jsonrpc":"2.0","id":1,"result":{"Content":[{"type":"text","text":"x"}],"IsError":true}}`,
			Result{}},
		{"repeated content: the last", `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"first"}],"content":[{"type":"text","text":"last"}]}}`,
			Result{Texts: []string{"last"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ResultOf(jsonrpc.Classify([]byte(tc.line)))
			if d := cmp.Diff(tc.want, got, cmp.Comparer(func(a, b []string) bool { return strings.Join(a, "\x00") == strings.Join(b, "\x00") })); d != "" {
				t.Errorf("ResultOf (-want +got):\n%s", d)
			}
		})
	}
}

func TestCallOf(t *testing.T) {
	m := jsonrpc.Classify([]byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"get\u005fuser","arguments":{"user_id":"u1"}}}`))
	c, ok := CallOf(m)
	if !ok || c.Name != "get_user" || string(c.Args) != `{"user_id":"u1"}` {
		t.Errorf("CallOf = %+v, %v", c, ok)
	}
	if _, ok := CallOf(jsonrpc.Classify([]byte(`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"x"}}`))); ok {
		t.Error("a notification is not a call")
	}
	if _, ok := CallOf(jsonrpc.Classify([]byte(`{"ID":7,"METHOD":"tools/call"}`))); ok {
		t.Error("names are exact: ID and METHOD are not id and method")
	}
	if c, ok := CallOf(jsonrpc.Classify([]byte(`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":[1]}`))); !ok || c.Name != "" {
		t.Errorf("a call with odd params is still a call: %+v %v", c, ok)
	}
}

func TestReadTools(t *testing.T) {
	tools, next := ReadTools([]byte(`{"tools":[
		{"name":"get_user","description":"d","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}},
		{"name":7},
		{"name":"update","annotations":{"readOnlyHint":false}},
		{"name":"plain","annotations":{"readOnlyHint":"yes"}}],"nextCursor":"c2"}`))
	if next != "c2" || len(tools) != 3 {
		t.Fatalf("ReadTools = %+v, %q", tools, next)
	}
	if tools[0].Name != "get_user" || string(tools[0].InputSchema) != `{"type":"object"}` || tools[0].Description != "d" {
		t.Errorf("tool 0 = %+v", tools[0])
	}
	for i, want := range []struct{ ro, ok bool }{{true, true}, {false, true}, {false, false}} {
		if ro, ok := tools[i].ReadOnly(); ro != want.ro || ok != want.ok {
			t.Errorf("tool %s ReadOnly = %v, %v; want %v, %v", tools[i].Name, ro, ok, want.ro, want.ok)
		}
	}
}

func TestInitialize(t *testing.T) {
	in := ReadInitialized([]byte(`{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"demo","version":"1"},"instructions":"Use lookup first."}`))
	if in.ProtocolVersion != "2025-06-18" || in.ServerName != "demo" || string(in.ServerInfo) != `{"name":"demo","version":"1"}` || in.Instructions != "Use lookup first." {
		t.Errorf("ReadInitialized = %+v", in)
	}
	req := ReadInitialize([]byte(`{"protocolVersion":"2025-11-25","clientInfo":{"name":"claude-code","version":"2"}}`))
	if req.ClientName != "claude-code" || req.ProtocolVersion != "2025-11-25" {
		t.Errorf("ReadInitialize = %+v", req)
	}
}

func TestProxyIDs(t *testing.T) {
	id := ProxyID(12)
	if string(id) != `"hoist-12"` || !IsProxyID(id) {
		t.Errorf("ProxyID(12) = %s, IsProxyID %v", id, IsProxyID(id))
	}
	for _, id := range []string{`12`, `"hoist-"`, `"x-hoist-1"`, `"hoist"`} {
		if IsProxyID([]byte(id)) {
			t.Errorf("IsProxyID(%s) = true", id)
		}
	}
	req := AppendToolCall(nil, ProxyID(3), "get\"user", json.RawMessage(`{"a":1}`))
	m := jsonrpc.Classify(req)
	c, ok := CallOf(m)
	if !ok || string(m.ID) != `"hoist-3"` || c.Name != `get"user` || string(c.Args) != `{"a":1}` {
		t.Errorf("AppendToolCall wrote %s", req)
	}
	e := jsonrpc.Classify(AppendError(nil, nil, -32000, "hoist-mcp: gone <now>"))
	if e.Kind != jsonrpc.Response || string(e.ID) != "null" || ResultOf(e).Text() != "hoist-mcp: gone <now>" {
		t.Errorf("AppendError: %+v", e)
	}
}

func TestAppendText(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a"}],"isError":false}}`,
			`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a"},{"type":"text","text":"x\ny"}],"isError":false}}`},
		{`{"id":1,"result":{"content":[ ]},"jsonrpc":"2.0"}`,
			`{"id":1,"result":{"content":[ {"type":"text","text":"x\ny"}]},"jsonrpc":"2.0"}`},
		{`{"id":1, "result" : { "content" : [ {"type":"text","text":"]"} ] } }`,
			`{"id":1, "result" : { "content" : [ {"type":"text","text":"]"} ,{"type":"text","text":"x\ny"}] } }`},
	} {
		got, ok := AppendText([]byte(tc.in), "x\ny")
		if !ok || string(got) != tc.want {
			t.Errorf("AppendText(%s) =\n%s, %v\nwant\n%s", tc.in, got, ok, tc.want)
		}
		if !jsontext.Valid(got) {
			t.Errorf("AppendText(%s) is not valid JSON", tc.in)
		}
	}
	for _, in := range []string{`{"id":1,"error":{"code":1,"message":"m"}}`, `{"id":1,"result":{"content":"x"}}`, `{"id":1,"result":{}}`} {
		if _, ok := AppendText([]byte(in), "x"); ok {
			t.Errorf("AppendText(%s) ok", in)
		}
	}
}

// FuzzAppendText: whatever the response, the item appended reads back as
// the last text item, and the rest of the result is as it was.
func FuzzAppendText(f *testing.F) {
	f.Add(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a"}]}}`, "lookups")
	f.Add(`{"id":1,"result":{"content":[],"content":[1]}}`, "")
	f.Fuzz(func(t *testing.T, resp, text string) {
		m := jsonrpc.Classify([]byte(resp))
		if m.Kind != jsonrpc.Response {
			return
		}
		out, ok := AppendText([]byte(resp), text)
		if !ok {
			return
		}
		if !jsontext.Valid(out) {
			t.Fatalf("AppendText(%q) = %q: not JSON", resp, out)
		}
		before, after := ResultOf(m), ResultOf(jsonrpc.Classify(out))
		if len(after.Texts) != len(before.Texts)+1 || after.Texts[len(after.Texts)-1] != string([]rune(text)) {
			t.Fatalf("AppendText(%q, %q): texts %q, then %q", resp, text, before.Texts, after.Texts)
		}
	})
}

func TestKindOfResult(t *testing.T) {
	if KindOfResult([]byte(`{"tools":[]}`)) != ServerResult || KindOfResult([]byte(`{"content":[]}`)) != OtherResult {
		t.Error("KindOfResult")
	}
}

// readResultByMembers is how ReadResult read a result before it walked it
// in one pass, member by member and level by level: the reference the
// one-pass reader must agree with.
func readResultByMembers(result []byte) Result {
	var r Result
	read(result,
		member{"isError", func(v []byte) { r.IsError = string(v) == "true" }},
		member{"structuredContent", &r.Structured},
		member{"content", func(v []byte) {
			r.Texts = nil
			for item := range jsontext.Elements(v) {
				var typ, text []byte
				read(item, member{"type", func(v []byte) { typ = v }}, member{"text", func(v []byte) { text = v }})
				if isText(typ) && jsontext.Kind(text) == '"' {
					r.Texts = append(r.Texts, jsontext.Unquote(text))
				}
			}
		}})
	return r
}

// FuzzReadResult: on any valid JSON, ReadResult reads what the reader by
// members reads (repeated members, escaped names, items of other types and
// shapes included).
func FuzzReadResult(f *testing.F) {
	for _, s := range []string{
		`{"content":[{"type":"text","text":"a\"b"},{"type":"image","data":"x"},{"text":"no type"},7,{"type":"text","text":"c"}],"isError":false}`,
		`{"content":[{"type":"text","text":"x"}],"content":"not a list","structuredContent":{"a":1}}`,
		`{"cont\u0065nt":[{"t\u0079pe":"text","text":"escaped names"}],"isError":true,"isError":false}`,
		`{"content":[{"type":"text","text":1},{"type":"text","text":"y","text":"z"}]}`,
		`[{"content":[]}]`, `"text"`, `{}`, `{"content":[]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !jsontext.Valid(b) {
			return
		}
		got, want := ReadResult(b), readResultByMembers(b)
		if len(got.Texts) == 0 && len(want.Texts) == 0 {
			got.Texts, want.Texts = nil, nil
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Fatalf("ReadResult(%s) (-by members +one pass):\n%s", b, d)
		}
	})
}
