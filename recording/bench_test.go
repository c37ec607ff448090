package recording

import (
	"encoding/json"
	"fmt"
	"testing"
)

// BenchmarkAnswer answers the calls of a recording of 10,000 calls (100
// tools, 100 argument sets each), every one by an exact match: the cost of
// a request to hoist-mcp-demo --replay, reading aside.
func BenchmarkAnswer(b *testing.B) {
	const n = 10000
	s := &Session{Path: "bench.jsonl"}
	lines := make([][]byte, n)
	for i := range n {
		args := json.RawMessage(fmt.Sprintf(`{"order_id":"#W%d","verbose":true,"page":{"size":10,"n":%d}}`, i%100, i))
		s.Exchanges = append(s.Exchanges, Exchange{Log: s.Path, Line: i + 2, AnswerLine: i + 3, From: "client", AnsweredBy: "server",
			Method: "tools/call", Tool: fmt.Sprintf("tool_%d", i/100), Args: args,
			Params: json.RawMessage(fmt.Sprintf(`{"name":"tool_%d","arguments":%s}`, i/100, args)),
			Result: json.RawMessage(`{"content":[{"type":"text","text":"{\"status\":\"pending\"}"}],"isError":false}`)})
		lines[i] = fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"tool_%d","arguments":{"page":{"n":%d,"size":10},"verbose":true,"order_id":"#W%d"}}}`, i, i/100, i, i%100)
	}
	r := NewReplayer([]*Session{s})
	for i := 0; b.Loop(); i++ {
		if a, _ := r.Answer(lines[i%n]); a == nil {
			b.Fatal("no answer")
		}
	}
}
