package flow

import (
	"bytes"
	"encoding/json"
	"strings"
)

// lineWidth is how wide a flow file's lines may grow before a member is
// broken over several: small objects such as a count or a binding stay on
// one line, so a person reads a site at a glance.
const lineWidth = 80

// indentJSON writes compact JSON raw indented by two spaces, keeping on one
// line every value whose compact form fits in the line. It keeps member
// order, so its output is as deterministic as its input.
func indentJSON(buf *bytes.Buffer, raw []byte, indent int) error {
	if indent+len(raw) <= lineWidth || len(raw) == 0 || raw[0] != '{' && raw[0] != '[' {
		buf.Write(raw)
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	open, err := dec.Token()
	if err != nil {
		return err
	}
	obj := open == json.Delim('{')
	closer := byte(']')
	if obj {
		closer = '}'
	}
	buf.WriteByte(raw[0])
	pad := strings.Repeat(" ", indent+2)
	n := 0
	for dec.More() {
		if n > 0 {
			buf.WriteByte(',')
		}
		buf.WriteByte('\n')
		buf.WriteString(pad)
		if obj {
			key, err := dec.Token()
			if err != nil {
				return err
			}
			if err := writeString(buf, key.(string)); err != nil {
				return err
			}
			buf.WriteString(": ")
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return err
		}
		if err := indentJSON(buf, v, indent+2); err != nil {
			return err
		}
		n++
	}
	if n > 0 {
		buf.WriteByte('\n')
		buf.WriteString(pad[:indent])
	}
	buf.WriteByte(closer)
	return nil
}

func writeString(buf *bytes.Buffer, s string) error {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return err
	}
	buf.Truncate(buf.Len() - 1) // Encode's newline
	return nil
}
