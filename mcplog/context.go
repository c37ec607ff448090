package mcplog

import (
	"strings"

	"github.com/hoist-mcp/hoist/jsontext"
)

// ReadContext reads the message of a context entry: one line of the
// conversation as the host appended it to the --context file,
// {"role": "user"|"assistant", "content": …}, where content is a string or
// a list of parts whose text parts are joined by newlines. ok is false for
// a message that is not an object.
func ReadContext(msg []byte) (role, text string, ok bool) {
	if jsontext.Kind(msg) != '{' || !jsontext.Valid(msg) {
		return "", "", false
	}
	for k, v := range jsontext.Members(msg) {
		switch string(k) {
		case "role":
			role = ""
			if v[0] == '"' {
				role = jsontext.Unquote(v)
			}
		case "content":
			text = ContentText(v)
		}
	}
	return role, text, true
}

// ContentText returns the text of a chat message's content, as context
// lines and τ²-bench's messages hold it: a string, or the text parts (type
// "text", or no type) of a list of parts, joined by newlines; "" for
// anything else. v must be valid JSON.
func ContentText(v []byte) string {
	switch jsontext.Kind(v) {
	case '"':
		return jsontext.Unquote(v)
	case '[':
		var texts []string
		for part := range jsontext.Elements(v) {
			var typ, txt []byte
			for k, v := range jsontext.Members(part) {
				switch string(k) {
				case "type":
					typ = v
				case "text":
					txt = v
				}
			}
			if (typ == nil || string(typ) == `"text"` || string(typ) == `""`) && len(txt) > 0 && txt[0] == '"' {
				texts = append(texts, jsontext.Unquote(txt))
			}
		}
		return strings.Join(texts, "\n")
	}
	return ""
}
