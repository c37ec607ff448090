package mcpmsg

import (
	"bytes"
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
	c := jsontext.NewCursor(list)
	return textPartsAt(&c, typeOK)
}

// textPartsAt is textParts of the value at c, which it moves past: a
// reader walking a result in one pass (ReadResult) reads its content list
// where it stands, so that each text is crossed once before it is
// unquoted, not once per enclosing level. A value that is not an array
// has no parts, and an item that is not an object no text.
func textPartsAt(c *jsontext.Cursor, typeOK func(typ []byte) bool) []string {
	if !c.Enter('[') {
		c.Value()
		return nil
	}
	var out []string
	for c.More(']') {
		if !c.Enter('{') {
			c.Value()
			continue
		}
		var typ, text []byte
		for c.More('}') {
			switch name := c.Name(); {
			case isName(name, "type"):
				typ = c.Value()
			case isName(name, "text"):
				text = c.Value()
			default:
				c.Value()
			}
		}
		if typeOK(typ) && jsontext.Kind(text) == '"' {
			out = append(out, jsontext.Unquote(text))
		}
	}
	return out
}

// isName reports whether the member name token tok (quotes included, as
// a Cursor gives it) names name, compared exactly after unquoting, as
// read compares names.
func isName(tok []byte, name string) bool {
	if len(tok) == len(name)+2 && string(tok[1:len(tok)-1]) == name {
		return true
	}
	return bytes.IndexByte(tok, '\\') >= 0 && jsontext.Unquote(tok) == name
}
