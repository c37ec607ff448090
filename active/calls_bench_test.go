package active

import (
	"os"
	"testing"
	"time"

	"github.com/hoist-mcp/hoist/jsonrpc"
	"github.com/hoist-mcp/hoist/mcpmsg"
	"github.com/hoist-mcp/hoist/toolpin"
)

// The Machine's own cost of a limit and of a pin check, without the
// proxy's hand-over between goroutines (proxy's BenchmarkLimitedCall
// measures that):
//
//	go test -run - -bench 'Limit|Pin' ./active

// BenchmarkLimitCheck: a held call of a tool two limits and a budget
// count, let through.
func BenchmarkLimitCheck(b *testing.B) {
	var rules []Limit
	for _, s := range []string{"*=1000000000/s", "lookup=1000000000/s"} {
		l, _ := ParseLimit(s)
		rules = append(rules, l)
	}
	m, err := New(Config{Server: "demo", Limits: &LimitsConfig{Rules: rules, MaxCalls: 1 << 30}})
	if err != nil {
		b.Fatal(err)
	}
	clock := time.Unix(0, 0)
	m.now = func() time.Time { return clock }
	h := &Held{Req: Request{Method: "tools/call", ID: "1", Call: mcpmsg.Call{Name: "lookup", Args: []byte(`{}`)}}}
	b.ReportAllocs()
	for b.Loop() {
		if taken, _ := m.Handle(h); taken {
			b.Fatal("refused")
		}
		clock = clock.Add(time.Microsecond)
	}
}

// BenchmarkPinCheck: the retail shop's tools/list answer (five tools)
// compared with its pin file, nothing changed.
func BenchmarkPinCheck(b *testing.B) {
	tools, err := os.ReadFile("../internal/demo/retail_tools.json")
	if err != nil {
		b.Fatal(err)
	}
	line := []byte(`{"jsonrpc":"2.0","id":2,"result":{"tools":` + string(tools) + `}}`)
	msg := jsonrpc.Classify(line)
	pinned, _ := toolpin.FromList(msg.Result)
	if len(pinned) != 5 {
		b.Fatalf("%d tools", len(pinned))
	}
	m, err := New(Config{Server: "retail", Pins: &PinsConfig{Tools: pinned, Changed: PinHide}})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		if _, hid := m.checkPins(line, msg); hid {
			b.Fatal("hid a tool")
		}
	}
}
