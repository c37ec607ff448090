package telemetry

import (
	"encoding/json"

	"github.com/hoist-mcp/hoist/jsonrpc"
	"github.com/hoist-mcp/hoist/jsontext"
)

// The proxy forwards lines it has not validated, and a 64 KiB message
// validated again for its span would cost more than the span: telemetry
// reads the few members it needs by their boundaries only, in one pass
// (readMessage), which skips a large value at the speed of a string scan.
// A line that is not JSON yields nothing, or members that make a span with
// odd attributes; nothing it reads is forwarded.

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

// msg is what a span needs of one message, read in one pass: the
// message, and of its params (a request's) or its result (a response's)
// the few members telemetry reads, so that a large argument or result is
// skipped once.
type msg struct {
	jsonrpc.Message
	name, version, meta []byte // params: name, protocolVersion, _meta
	isError             bool   // result: isError true
	resultVersion       []byte // result: protocolVersion
}

// messages calls fn with each JSON-RPC message of line (without its
// terminator): the line's one object, or each element of a batch, which
// is rare and validated first.
func messages(line []byte, fn func(msg)) {
	if jsontext.Kind(line) == '[' {
		for m := range jsonrpc.Messages(line) {
			if m.Kind != jsonrpc.Batch {
				if x, ok := readMessage(m.Raw); ok {
					fn(x)
				}
			}
		}
		return
	}
	if x, ok := readMessage(line); ok {
		fn(x)
	}
}

// readMessage reads one object by its members' boundaries (cursor, which
// checks nothing: the caller recovers from a panic on bytes that are not
// JSON, and a cursor that stops moving ends the read).
func readMessage(line []byte) (msg, bool) {
	var x msg
	c := cursor{b: line}
	if !c.enter('{') {
		return x, false
	}
	hasMethod := false
	steps := 0
	for c.more('}') {
		if steps++; steps > len(line) {
			return x, false
		}
		switch string(c.name()) {
		case `"id"`:
			x.ID = json.RawMessage(c.value())
		case `"method"`:
			v := c.value()
			x.Method = str(v)
			hasMethod = x.Method != "" || string(v) == `""`
		case `"params"`:
			x.Params = json.RawMessage("{}")
			members(&c, len(line), func(name string, c *cursor) {
				switch name {
				case `"name"`:
					x.name = c.value()
				case `"protocolVersion"`:
					x.version = c.value()
				case `"_meta"`:
					x.meta = c.value()
				default:
					c.value()
				}
			})
		case `"result"`:
			x.Result = json.RawMessage("{}")
			members(&c, len(line), func(name string, c *cursor) {
				switch name {
				case `"isError"`:
					x.isError = string(c.value()) == "true"
				case `"protocolVersion"`:
					x.resultVersion = c.value()
				default:
					c.value()
				}
			})
		case `"error"`:
			v := c.value()
			x.Error = nil
			if string(v) != "null" {
				x.Error = json.RawMessage(v)
			}
		default:
			c.value()
		}
	}
	switch {
	case hasMethod && x.ID != nil:
		x.Kind = jsonrpc.Request
	case hasMethod:
		x.Kind = jsonrpc.Notification
	case x.ID != nil && (x.Result != nil || x.Error != nil):
		x.Kind = jsonrpc.Response
		x.IsError = x.Error != nil
	default:
		return x, false
	}
	return x, true
}

// members calls fn with each member name token of the object at the
// cursor, fn moving past its value; a value that is not an object is
// skipped.
func members(c *cursor, limit int, fn func(name string, c *cursor)) {
	if !c.enter('{') {
		c.value()
		return
	}
	for steps := 0; c.more('}'); steps++ {
		if steps > limit {
			panic("telemetry: not JSON")
		}
		fn(string(c.name()), c)
	}
}
