package telemetry

import (
	"encoding/json"

	"github.com/hoist-mcp/hoist/jsonrpc"
	"github.com/hoist-mcp/hoist/jsontext"
)

// The proxy forwards lines it has not validated, and a 64 KiB message
// validated again for its span would cost more than the span: telemetry
// reads the few members it needs by their boundaries only
// (jsontext.ScanPrefix), which skips a large value at the speed of a
// string scan and stops at whatever is not JSON. A line that is not JSON
// yields nothing, or members that make a span with odd names; nothing it
// reads is forwarded.

// member returns the value of obj's top-level member name (the last one
// that is whole), or nil.
func member(obj []byte, name string) []byte {
	var found []byte
	jsontext.ScanPrefix(obj, func(k, v []byte) bool {
		if string(k) == name && v != nil {
			found = v
		}
		return true
	})
	return found
}

// str returns the text of a JSON string value, "" for anything else.
func str(v []byte) string {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return ""
	}
	if n, ok := jsontext.ValueLen(v); !ok || n != len(v) {
		return ""
	}
	return jsontext.Unquote(v)
}

// messages calls fn with each JSON-RPC message of line (without its
// terminator): the line's one object, read by its members' boundaries, or
// each element of a batch, which is rare and validated first.
func messages(line []byte, fn func(jsonrpc.Message)) {
	if jsontext.Kind(line) == '[' {
		for m := range jsonrpc.Messages(line) {
			fn(m)
		}
		return
	}
	var m jsonrpc.Message
	hasMethod := false
	end := jsontext.ScanPrefix(line, func(k, v []byte) bool {
		if v == nil {
			return true
		}
		switch string(k) {
		case "id":
			m.ID = json.RawMessage(v)
		case "method":
			m.Method = str(v)
			hasMethod = m.Method != "" || string(v) == `""`
		case "params":
			m.Params = json.RawMessage(v)
		case "result":
			m.Result = json.RawMessage(v)
		case "error":
			m.Error = nil
			if string(v) != "null" {
				m.Error = json.RawMessage(v)
			}
		}
		return true
	})
	if end != jsontext.PrefixClosed {
		return
	}
	switch {
	case hasMethod && m.ID != nil:
		m.Kind = jsonrpc.Request
	case hasMethod:
		m.Kind = jsonrpc.Notification
	case m.ID != nil && (m.Result != nil || m.Error != nil):
		m.Kind = jsonrpc.Response
		m.IsError = m.Error != nil
	default:
		return
	}
	fn(m)
}

// params are the members of a request's params that its span needs, read
// in one pass: a call's large arguments are skipped once.
type params struct{ name, version, meta []byte }

func readParams(p []byte) params {
	var out params
	jsontext.ScanPrefix(p, func(k, v []byte) bool {
		if v == nil {
			return true
		}
		switch string(k) {
		case "name":
			out.name = v
		case "protocolVersion":
			out.version = v
		case "_meta":
			out.meta = v
		}
		return true
	})
	return out
}
