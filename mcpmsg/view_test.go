package mcpmsg

import (
	"testing"

	"github.com/hoist-mcp/hoist/jsonrpc"
)

var viewLine = []byte(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"cancel_pending_order","arguments":{"order_id":"#W4a","reason":"no longer needed"},"_meta":{"progressToken":7}}}`)

func TestReadView(t *testing.T) {
	for line, want := range map[string]string{
		string(viewLine): "",
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"Name":"x","arguments":{}}}`:                             "params.Name",
		`{"jsonrpc":"2.0","ID":5,"method":"tools/call","params":{"name":"x"}}`:                                            "ID",
		`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"NAME":"x"}}]`: "[1].params.NAME",
	} {
		v := ReadView([]byte(line))
		if v.Odd != want {
			t.Errorf("ReadView(%s).Odd = %q, want %q", line, v.Odd, want)
		}
	}
	v := ReadView(viewLine)
	if v.Kind != jsonrpc.Request || v.Call.Name != "cancel_pending_order" || string(v.Call.Args) != `{"order_id":"#W4a","reason":"no longer needed"}` ||
		string(v.Meta.ProgressToken) != "7" {
		t.Errorf("ReadView = %+v", v)
	}
	if p := ReadView([]byte(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"x","arguments":{"Order_ID":"#W4a"}}}`)).ArgsOdd(); p != "params.arguments.Order_ID" {
		t.Errorf("ArgsOdd = %q", p)
	}
}

// BenchmarkReadView is the view of a guarded write; BenchmarkClassifyCall
// the exact readings it replaces (Classify, ReadCall, ReadRequestMeta).
func BenchmarkReadView(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		v := ReadView(viewLine)
		_ = v.ArgsOdd()
	}
}

func BenchmarkClassifyCall(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		m := jsonrpc.Classify(viewLine)
		_ = ReadCall(m.Params)
		_ = ReadRequestMeta(m.Params)
		_ = IsRetry(m.Params)
	}
}
