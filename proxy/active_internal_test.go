package proxy

import "testing"

func TestResultText(t *testing.T) {
	for _, tc := range []struct {
		resp   string
		text   string
		failed bool
	}{
		{`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a\nb"},{"type":"image","data":"x"},{"text":"c","type":"text"}],"isError":false}}`, "a\nb\nc", false},
		{`{"id":1,"result":{"isError":true,"content":[{"type":"text","text":"Error: no such order"}]}}`, "Error: no such order", true},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"unknown tool: x"}}`, "unknown tool: x", true},
		{`{"jsonrpc":"2.0","id":1,"result":{}}`, "", false},
		{`{"jsonrpc":"2.0","id":1}`, "", true},
	} {
		text, failed := resultText([]byte(tc.resp))
		if text != tc.text || failed != tc.failed {
			t.Errorf("resultText(%s) = %q, %v; want %q, %v", tc.resp, text, failed, tc.text, tc.failed)
		}
	}
}

func TestAppendItem(t *testing.T) {
	for _, tc := range []struct{ resp, want string }{
		{`{"id":3,"result":{"content":[{"type":"text","text":"x"}],"isError":false}}`,
			`{"id":3,"result":{"content":[{"type":"text","text":"x"},{"type":"text","text":"more"}],"isError":false}}`},
		{`{"id":3,"result":{"content":[ ]}}`, `{"id":3,"result":{"content":[ {"type":"text","text":"more"}]}}`},
		{`{"result":{"isError":false,"content":[{"type":"text","text":"]"}] },"id":"a"}`,
			`{"result":{"isError":false,"content":[{"type":"text","text":"]"},{"type":"text","text":"more"}] },"id":"a"}`},
	} {
		got, ok := appendItem([]byte(tc.resp), "more")
		if !ok || string(got) != tc.want {
			t.Errorf("appendItem(%s) =\n %s, %v\nwant\n %s", tc.resp, got, ok, tc.want)
		}
	}
	if _, ok := appendItem([]byte(`{"id":1,"error":{"code":1,"message":"m"}}`), "more"); ok {
		t.Error("appendItem changed an error response")
	}
}
