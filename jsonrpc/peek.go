package jsonrpc

import (
	"bytes"

	"github.com/hoist-mcp/hoist/jsontext"
)

// LooksLikeMessage reports, cheaply and from the start of a line alone,
// whether the line is JSON-RPC traffic: an object with a method, result or
// error member before the first part it cannot see, or a batch, an array
// whose first element is such an object (an array of anything else, such
// as [1,2] or [], is a server logging to stdout). It answers true when
// prefix ends before it can tell. The proxy uses it to warn about servers
// that log to stdout without validating every byte it forwards.
func LooksLikeMessage(prefix []byte) bool {
	switch jsontext.Kind(prefix) {
	case '[':
		first := bytes.TrimLeft(bytes.TrimLeft(prefix, " \t\r\n")[1:], " \t\r\n")
		return len(first) == 0 || first[0] == '{' && LooksLikeMessage(first)
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
