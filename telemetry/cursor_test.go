package telemetry

import "testing"

// TestReadMessageEscapes: a string's end is the first quote after an even
// run of backslashes, so members after strings full of escaped quotes and
// backslashes are still found.
func TestReadMessageEscapes(t *testing.T) {
	for _, arg := range []string{`"a\"b"`, `"\\"`, `"\\\\"`, `"x\\\"y\\"`, `"\""`, `{"k\"":["\\",{"q":"\"}"}]}`, `""`} {
		line := []byte(`{"jsonrpc":"2.0","id":"i\"d","method":"tools/call","params":{"arguments":{"a":` + arg + `},"name":"echo","_meta":{"traceparent":"t"}}}`)
		var m msg
		ok := readMessage(line, &m)
		if !ok || string(m.id) != `"i\"d"` || string(m.method) != `"tools/call"` || string(m.name) != `"echo"` || string(m.meta) != `{"traceparent":"t"}` {
			t.Errorf("argument %s: read %v id %s name %s meta %s", arg, ok, m.id, m.name, m.meta)
		}
	}
}
