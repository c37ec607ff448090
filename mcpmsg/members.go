package mcpmsg

import (
	"encoding/json"

	"github.com/hoist-mcp/hoist/jsontext"
)

// member names a member of an object and where its value goes: a *string
// takes a string (a value of another kind leaves it ""), a
// *json.RawMessage the value as sent, a func the value to read itself.
// Readers here are lists of members: what a message holds, as data.
type member struct {
	name string
	dst  any
}

// read reads the members of obj (valid JSON) into ms, by name compared
// exactly; a name repeated counts as its last occurrence, as jsontext
// decides. Members not in ms, and an obj that is not an object, are left
// alone: readers of messages are lenient about shapes.
func read(obj []byte, ms ...member) {
	for k, v := range jsontext.Members(obj) {
		for _, m := range ms {
			if m.name != string(k) {
				continue
			}
			switch dst := m.dst.(type) {
			case *string:
				*dst = str(v)
			case *json.RawMessage:
				*dst = json.RawMessage(v)
			case func([]byte):
				dst(v)
			}
			break
		}
	}
}

// str returns the string a JSON value holds, or "" for another kind.
func str(v []byte) string {
	if len(v) == 0 || v[0] != '"' {
		return ""
	}
	return jsontext.Unquote(v)
}

// textParts returns the text of the items of a content list (valid JSON)
// whose type is accepted by typeOK: a tool result's content, a chat
// message's list of parts.
func textParts(list []byte, typeOK func(typ []byte) bool) []string {
	var out []string
	for item := range jsontext.Elements(list) {
		var typ, text []byte
		read(item, member{"type", func(v []byte) { typ = v }}, member{"text", func(v []byte) { text = v }})
		if typeOK(typ) && jsontext.Kind(text) == '"' {
			out = append(out, jsontext.Unquote(text))
		}
	}
	return out
}
