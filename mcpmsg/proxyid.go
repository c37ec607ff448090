package mcpmsg

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/hoist-mcp/hoist/jsontext"
)

// ProxyIDPrefix starts the id of every request the proxy makes of its own
// (manual, "Active mode": ids hoist-<n>), so that a reader of a session log
// tells its calls (with from: "proxy"). The proxy itself routes answers by
// the ids it has in flight (jsonrpc.IDs), never by their prefix: a host may
// use such ids too (issue 23, point 3).
const ProxyIDPrefix = "hoist-"

// ProxyID returns the id of the proxy's n-th request of a session, as
// JSON: "hoist-<n>".
func ProxyID(n uint64) json.RawMessage {
	b := append([]byte(`"`), ProxyIDPrefix...)
	b = strconv.AppendUint(b, n, 10)
	return append(b, '"')
}

// IsProxyID reports whether a raw id looks like one the proxy gives its
// own requests: a string starting with ProxyIDPrefix. Only for reading
// logs, where from: "proxy" says whose a request was; a host's id may look
// the same.
func IsProxyID(id []byte) bool {
	return len(id) >= len(ProxyIDPrefix)+3 && id[0] == '"' && bytes.HasPrefix(id[1:], []byte(ProxyIDPrefix))
}

// AppendToolCall appends a tools/call request with id (raw JSON) for tool
// with args (a JSON object; nil for none), without a line terminator.
func AppendToolCall(dst []byte, id json.RawMessage, tool string, args json.RawMessage) []byte {
	return AppendToolCallMeta(dst, id, tool, args, nil)
}

// AppendToolCallMeta is AppendToolCall with params._meta set to meta (a JSON
// object; nil for none), as a stateless-era server needs (ModernMeta).
func AppendToolCallMeta(dst []byte, id json.RawMessage, tool string, args, meta json.RawMessage) []byte {
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = append(dst, id...)
	dst = append(dst, `,"method":"tools/call","params":{"name":`...)
	dst = jsontext.AppendString(dst, tool, jsontext.Plain)
	dst = append(dst, `,"arguments":`...)
	dst = append(dst, args...)
	if len(meta) > 0 {
		dst = append(dst, `,"_meta":`...)
		dst = append(dst, meta...)
	}
	return append(dst, "}}"...)
}

// AppendError appends a JSON-RPC error response to id (raw JSON; nil is
// null) with code and message, without a line terminator.
func AppendError(dst []byte, id json.RawMessage, code int, message string) []byte {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = append(dst, id...)
	dst = append(dst, `,"error":{"code":`...)
	dst = strconv.AppendInt(dst, int64(code), 10)
	dst = append(dst, `,"message":`...)
	dst = jsontext.AppendString(dst, message, jsontext.Plain)
	return append(dst, "}}"...)
}

// AppendCancelled appends a notifications/cancelled for the request id (raw
// JSON) with reason, without a line terminator: what the proxy tells a
// server over stdio when the host of the stateless era closed that
// request's stream, which is how that era cancels over HTTP.
func AppendCancelled(dst []byte, id json.RawMessage, reason string) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`...)
	dst = append(dst, id...)
	dst = append(dst, `,"reason":`...)
	dst = jsontext.AppendString(dst, reason, jsontext.Plain)
	return append(dst, "}}"...)
}
