package telemetry

import (
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
// message's id, method and error as their raw JSON, and of its params (a
// request's) or its result (a response's) the few members telemetry reads,
// so that a large argument or result is skipped once. Every member aliases
// the line: nothing is copied, and reading allocates nothing.
type msg struct {
	kind                jsonrpc.Kind
	id, method, err     []byte // raw JSON; err nil when absent or null
	name, version, meta []byte // params: name, protocolVersion, _meta
	result, isError     bool   // a result member; its isError true
	resultVersion       []byte // result: protocolVersion
}

// readMessage reads one object by its members' boundaries into x (cursor,
// which checks nothing: the caller recovers from a panic on bytes that are
// not JSON, and a cursor that stops moving ends the read). It allocates
// nothing.
func readMessage(line []byte, x *msg) bool {
	c := cursor{b: line}
	if !c.enter('{') {
		return false
	}
	hasMethod := false
	limit := len(line)
	for steps := 0; c.more('}'); steps++ {
		if steps > limit {
			return false
		}
		switch string(c.name()) {
		case `"id"`:
			x.id = c.value()
		case `"method"`:
			v := c.value()
			hasMethod = len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"'
			x.method = v
		case `"params"`:
			if !c.object() {
				continue
			}
			for n := 0; c.more('}'); n++ {
				if n > limit {
					return false
				}
				switch string(c.name()) {
				case `"name"`:
					x.name = c.value()
				case `"protocolVersion"`:
					x.version = c.value()
				case `"_meta"`:
					x.meta = c.value()
				default:
					c.value()
				}
			}
		case `"result"`:
			x.result = true
			if !c.object() {
				continue
			}
			for n := 0; c.more('}'); n++ {
				if n > limit {
					return false
				}
				switch string(c.name()) {
				case `"isError"`:
					x.isError = string(c.value()) == "true"
				case `"protocolVersion"`:
					x.resultVersion = c.value()
				default:
					c.value()
				}
			}
		case `"error"`:
			x.err = nil
			if v := c.value(); string(v) != "null" {
				x.err = v
			}
		default:
			c.value()
		}
	}
	switch {
	case hasMethod && x.id != nil:
		x.kind = jsonrpc.Request
	case hasMethod:
		x.kind = jsonrpc.Notification
	case x.id != nil && (x.result || x.err != nil):
		x.kind = jsonrpc.Response
	default:
		return false
	}
	return true
}
