package telemetry

import (
	"strings"
	"testing"
)

// BenchmarkReadLarge reads what a span needs of a 64 KiB call and its
// answer: the large argument and result are skipped.
func BenchmarkReadLarge(b *testing.B) {
	text := strings.Repeat("0123456789abcdef", 4096)
	call := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"message":"` + text + `"},"_meta":{"progressToken":7}}}`)
	answer := []byte(`{"result":{"content":[{"type":"text","text":"Echo: ` + text + `"}]},"jsonrpc":"2.0","id":7}`)
	b.SetBytes(int64(len(call) + len(answer)))
	for b.Loop() {
		var m, a msg
		if !readMessage(call, &m) || string(m.name) != `"echo"` || m.meta == nil {
			b.Fatal("call misread")
		}
		if !readMessage(answer, &a) || string(a.id) != "7" {
			b.Fatal("answer misread")
		}
	}
}
