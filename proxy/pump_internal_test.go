package proxy

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hoist-mcp/hoist/jsonrpc"
)

// TestPumpStartPeek: the check at the start of a line sees its first bytes
// only, however long the line, and still tells a large JSON-RPC answer from
// a server's log line; every line is forwarded and recorded whole.
func TestPumpStartPeek(t *testing.T) {
	big := `{"result":{"content":[{"type":"text","text":"` + strings.Repeat("e", 200<<10) + `"}]},"jsonrpc":"2.0","id":7}`
	in := big + "\n" + "server listening on :8080\n" + `{"jsonrpc":"2.0","id":8,"result":{}}` + "\n"
	for _, intercept := range []bool{false, true} {
		var out bytes.Buffer
		var starts []string
		var lines []string
		p := &pump{
			src:      strings.NewReader(in),
			dst:      &out,
			maxFrame: 1 << 20,
			keep:     true,
			onStart:  func(first []byte) { starts = append(starts, string(first)) },
			onLine:   func(line []byte) { lines = append(lines, string(line)) },
		}
		if intercept {
			p.intercept = func([]byte) bool { return false }
		}
		if err := p.run(); err != nil {
			t.Fatal(err)
		}
		if out.String() != in {
			t.Errorf("intercept %v: forwarded %d bytes, want the %d sent", intercept, out.Len(), len(in))
		}
		if strings.Join(lines, "") != in || len(lines) != 3 {
			t.Errorf("intercept %v: %d lines recorded, want 3 whole", intercept, len(lines))
		}
		if len(starts) != 3 {
			t.Fatalf("intercept %v: onStart called %d times, want 3", intercept, len(starts))
		}
		if len(starts[0]) > startPeek {
			t.Errorf("intercept %v: onStart saw %d bytes of a line, want at most %d", intercept, len(starts[0]), startPeek)
		}
		looks := []bool{jsonrpc.LooksLikeMessage([]byte(starts[0])), jsonrpc.LooksLikeMessage([]byte(starts[1])), jsonrpc.LooksLikeMessage([]byte(starts[2]))}
		if !looks[0] || looks[1] || !looks[2] {
			t.Errorf("intercept %v: LooksLikeMessage of the starts = %v, want [true false true]", intercept, looks)
		}
	}
}
