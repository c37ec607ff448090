package hold

import (
	"reflect"
	"slices"
	"testing"
)

func TestLift(t *testing.T) {
	cases := []struct {
		name, method, value string
		modern              bool
		want                string
	}{
		{"a string is one text block", "tools/call", `"all good"`, false, `{"content":[{"type":"text","text":"all good"}]}`},
		{"an object is its JSON and structuredContent", "tools/call", `{"total": 3}`, false,
			`{"content":[{"type":"text","text":"{\"total\":3}"}],"structuredContent":{"total":3}}`},
		{"a result is kept", "tools/call", `{"content":[{"type":"text","text":"x"}],"isError":true}`, false,
			`{"content":[{"type":"text","text":"x"}],"isError":true}`},
		{"structuredContent alone is a result", "tools/call", `{"structuredContent":{"a":1}}`, false, `{"structuredContent":{"a":1}}`},
		{"a number is its text", "tools/call", `42`, false, `{"content":[{"type":"text","text":"42"}]}`},
		{"the stateless era's resultType", "tools/call", `"ok"`, true, `{"content":[{"type":"text","text":"ok"}],"resultType":"complete"}`},
		{"a resource", "resources/read", `"body"`, true,
			`{"contents":[{"uri":"hoist-console:injected","text":"body"}],"resultType":"complete","ttlMs":0,"cacheScope":"private"}`},
		{"a prompt", "prompts/get", `"say hi"`, false, `{"messages":[{"role":"user","content":{"type":"text","text":"say hi"}}]}`},
		{"a sampled message", "sampling/createMessage", `"hello"`, false,
			`{"role":"assistant","model":"hoist-console","content":{"type":"text","text":"hello"}}`},
		{"a method not modelled is as typed", "tools/list", `{"tools": []}`, true, `{"tools":[]}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := string(Lift(c.method, []byte(c.value), c.modern)); got != c.want {
				t.Errorf("Lift(%s, %s) =\n%s\nwant\n%s", c.method, c.value, got, c.want)
			}
		})
	}
}

func TestDecide(t *testing.T) {
	id := []byte(`7`)
	cases := []struct {
		name   string
		p      Point
		a      Action
		id     []byte
		value  string
		want   Verdict
		wantIn string // the line, when one is made
	}{
		{name: "continue a request", p: Before, a: Continue, id: id, want: Verdict{Forward: true}},
		{name: "retry a request is continue", p: Before, a: Retry, id: id, want: Verdict{Forward: true}},
		{name: "retry a response resends", p: After, a: Retry, id: id, want: Verdict{Resend: true}},
		{name: "abort a request answers -32099", p: Before, a: Abort, id: id, want: Verdict{Answer: true},
			wantIn: `{"jsonrpc":"2.0","id":7,"error":{"code":-32099,"message":"aborted from the hoist console"}}`},
		{name: "abort a response forwards -32099 in its place", p: After, a: Abort, id: id, want: Verdict{Forward: true},
			wantIn: `{"jsonrpc":"2.0","id":7,"error":{"code":-32099,"message":"aborted from the hoist console"}}`},
		{name: "abort a notification drops it", p: Before, a: Abort, want: Verdict{Drop: true}},
		{name: "inject at a request answers it", p: Before, a: Inject, id: id, value: `"cached"`, want: Verdict{Answer: true},
			wantIn: `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"cached"}]}}`},
		{name: "inject at a response rewrites it", p: After, a: Inject, id: id, value: `"fixed"`, want: Verdict{Forward: true},
			wantIn: `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"fixed"}]}}`},
		{name: "a whole frame is sent verbatim", p: Before, a: Inject, id: id, value: `{"jsonrpc": "2.0", "id": 7, "error": {"code": -1, "message": "no"}}`,
			want: Verdict{Answer: true}, wantIn: `{"jsonrpc":"2.0","id":7,"error":{"code":-1,"message":"no"}}`},
		{name: "a notification is replaced by a frame", p: Before, a: Inject, value: `{"jsonrpc":"2.0","method":"notifications/x"}`,
			want: Verdict{Forward: true}, wantIn: `{"jsonrpc":"2.0","method":"notifications/x"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Decide(c.p, c.a, c.id, "tools/call", []byte(c.value), false)
			if err != nil {
				t.Fatal(err)
			}
			if string(got.Line) != c.wantIn {
				t.Errorf("line %s, want %s", got.Line, c.wantIn)
			}
			got.Line = nil
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("verdict %+v, want %+v", got, c.want)
			}
		})
	}
	if _, err := Decide(Before, Inject, id, "tools/call", []byte(`{bad`), false); err == nil {
		t.Error("inject of a value that is not JSON: no error")
	}
	if _, err := Decide(Before, Inject, nil, "notifications/x", []byte(`"x"`), false); err == nil {
		t.Error("inject of a bare value at a notification: no error")
	}
	// An object that is not a whole frame is the notification's new params
	// (issue 23, point 8: an inject at a notification was ignored).
	got, err := Decide(Before, Inject, nil, "notifications/message", []byte(`{"level": "info", "data": "edited"}`), false)
	want := `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"edited"}}`
	if err != nil || !got.Forward || string(got.Line) != want {
		t.Errorf("inject of an object at a notification: %+v (%s), %v; want it forwarded as %s", got, got.Line, err, want)
	}
	if _, err := ParseAction("skip"); err == nil {
		t.Error("ParseAction(skip): no error")
	}
}

func TestLoop(t *testing.T) {
	call := func(args, meta string) []byte {
		p := `{"name":"list_issues","arguments":` + args
		if meta != "" {
			p += `,"_meta":` + meta
		}
		return []byte(p + "}")
	}
	other := []byte(`{"name":"get_issue","arguments":{"id":1}}`)
	t.Run("the third identical call is held, whatever its _meta", func(t *testing.T) {
		l := NewLoop()
		got := []bool{
			l.Call(call(`{"state":"open"}`, `{"progressToken":1}`)),
			l.Call(call(`{ "state" : "open" }`, `{"progressToken":2}`)),
			l.Call(call(`{"state":"open"}`, `{"progressToken":3}`)),
			l.Call(call(`{"state":"open"}`, `{"progressToken":4}`)),
		}
		if want := []bool{false, false, true, true}; !slices.Equal(got, want) {
			t.Errorf("held %v, want %v", got, want)
		}
	})
	t.Run("another call between breaks the run", func(t *testing.T) {
		l := NewLoop()
		got := []bool{l.Call(call(`{}`, "")), l.Call(call(`{}`, "")), l.Call(other), l.Call(call(`{}`, "")), l.Call(call(`{}`, ""))}
		if want := []bool{false, false, false, false, false}; !slices.Equal(got, want) {
			t.Errorf("held %v, want %v", got, want)
		}
	})
	t.Run("other arguments break the run", func(t *testing.T) {
		l := NewLoop()
		got := []bool{l.Call(call(`{"page":1}`, "")), l.Call(call(`{"page":2}`, "")), l.Call(call(`{"page":3}`, ""))}
		if want := []bool{false, false, false}; !slices.Equal(got, want) {
			t.Errorf("held %v, want %v", got, want)
		}
	})
	t.Run("an allowed tool is polled freely", func(t *testing.T) {
		l := NewLoop("list_issues")
		for i := 0; i < 5; i++ {
			if l.Call(call(`{}`, "")) {
				t.Fatalf("call %d of an allowed tool held", i+1)
			}
		}
	})
}

// TestDigest: a frame's digest is its content's, however it is spelled,
// and the point it is held at is part of it.
func TestDigest(t *testing.T) {
	a := Digest(Before, []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"cancel","arguments":{"order_id":"#W1","reason":"x"}}}`))
	same := Digest(Before, []byte(` {"id":7,"jsonrpc":"2.0","params":{"arguments":{"reason":"x","order_id":"#W\u0031"},"name":"cancel"},"method":"tools/call"}`))
	if a != same {
		t.Errorf("one frame, two digests: %s %s", a, same)
	}
	for _, other := range []string{
		Digest(Before, []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"cancel","arguments":{"order_id":"#W2","reason":"x"}}}`)),
		Digest(After, []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"cancel","arguments":{"order_id":"#W1","reason":"x"}}}`)),
	} {
		if other == a {
			t.Errorf("another frame has the digest %s", a)
		}
	}
}
