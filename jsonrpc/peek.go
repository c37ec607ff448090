package jsonrpc

import "github.com/hoist-mcp/hoist/jsontext"

// LooksLikeMessage reports, cheaply and from the start of a line alone,
// whether the line is JSON-RPC traffic: a batch, or an object with a method,
// result or error member before the first part it cannot see. It answers
// true when prefix ends before it can tell. The proxy uses it to warn about
// servers that log to stdout without validating every byte it forwards.
func LooksLikeMessage(prefix []byte) bool {
	switch jsontext.Kind(prefix) {
	case '[':
		return true
	case '{':
	default:
		return false
	}
	found := false
	end := jsontext.ScanPrefix(prefix, func(name, _ []byte) bool {
		switch string(name) {
		case "method", "result", "error":
			found = true
			return false
		}
		return true
	})
	return found || end == jsontext.PrefixCut
}
