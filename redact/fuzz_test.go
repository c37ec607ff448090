package redact

import (
	"encoding/json"
	"testing"

	"github.com/hoist-mcp/hoist/jsonrpc"
	"github.com/hoist-mcp/hoist/jsontext"
)

// FuzzMessage: whatever a logged message holds, its redacted form is valid
// JSON of the same kind, and a JSON-RPC message keeps its method and id
// (anything else is redacted whole).
func FuzzMessage(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"lookup","arguments":{"text":"hello","n":-1.5e3}}}`,
		`{"id":3,"jsonrpc":"2.0","result":{"content":[{"text":"{\"user_id\": \"user_15\", \"orders\": [\"#W15a\"]}","type":"text"}],"isError":false}}`,
		`{"jsonrpc":"2.0","id":"q","error":{"code":-32000,"message":"no order #W15a","data":{"x":[1,"Zoë"]}}}`,
		`[{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"a@b.co"}}]`,
		`{"role":"user","content":"My zip is 02139 \u00e9"}`,
	} {
		f.Add(s)
	}
	p := NewPseudonymizer(testKey, []string{"user"})
	f.Fuzz(func(t *testing.T, s string) {
		in := []byte(s)
		if !jsontext.Valid(in) {
			return
		}
		w := &rewriter{p: p, count: func(string) {}}
		out := w.message(nil, "server", in)
		if !jsontext.Valid(out) || !json.Valid(out) {
			t.Fatalf("redacted %s to invalid JSON %s", in, out)
		}
		a, b := jsonrpc.Classify(in), jsonrpc.Classify(out)
		if a.Kind != b.Kind || a.Kind.IsMessage() && a.Kind != jsonrpc.Batch && (a.Method != b.Method || string(a.ID) != string(b.ID)) {
			t.Fatalf("redacted %s to %s: %+v, then %+v", in, out, a, b)
		}
	})
}
