package mcpmsg

import (
	"strings"

	"github.com/hoist-mcp/hoist/jsontext"
)

// ReadChat reads one message of a conversation, {"role": "user" |
// "assistant", "content": …}: a line the host appends to hoist-mcp's
// --context file (and the log keeps as a context entry), shaped as MCP's
// prompt and sampling messages and the chat APIs are. ok is false for a
// message that is not a JSON object.
func ReadChat(msg []byte) (role, text string, ok bool) {
	if jsontext.Kind(msg) != '{' || !jsontext.Valid(msg) {
		return "", "", false
	}
	read(msg, member{"role", &role}, member{"content", func(v []byte) { text = ContentText(v) }})
	return role, text, true
}

// ContentText returns the text of a chat message's content (valid JSON),
// as context lines and τ²-bench's messages hold it: a string, or the text
// parts (type "text", or no type) of a list of parts joined by newlines, or
// one such part; "" for anything else.
func ContentText(v []byte) string {
	switch jsontext.Kind(v) {
	case '"':
		return jsontext.Unquote(v)
	case '[':
		return strings.Join(textParts(v, isPartText), "\n")
	case '{':
		return strings.Join(textParts(append(append([]byte{'['}, v...), ']'), isPartText), "\n")
	}
	return ""
}

// isPartText accepts a chat message's text parts: type "text", or none.
func isPartText(typ []byte) bool { return typ == nil || string(typ) == `"text"` || string(typ) == `""` }
