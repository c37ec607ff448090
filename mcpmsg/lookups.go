package mcpmsg

import (
	"encoding/json"
	"strings"

	"github.com/hoist-mcp/hoist/jsontext"
)

// Banner opens the text item the proxy appends to the agent's result after
// looking things up for it (manual, "Active mode").
const Banner = "--- Also looked up automatically (current results; no need to repeat these calls) ---"

// Lookup is one call the proxy made on the agent's behalf, as the appended
// item reports it.
type Lookup struct {
	// Tool is the name the server knows the tool by.
	Tool string
	// Args are the call's arguments, a JSON object as sent.
	Args json.RawMessage
	// Text is the lookup's result text.
	Text string
}

// Key is the lookup's call for matching against a call the agent makes:
// the tool and its arguments in canonical form (members sorted).
func (l Lookup) Key() string { return CallKey(l.Tool, l.Args) }

// CallKey returns the key of a call of tool with args (a JSON object):
// "tool {canonical args}", so that a lookup and the agent's own call of it
// compare equal however their members were ordered or spaced.
func CallKey(tool string, args json.RawMessage) string {
	if len(args) == 0 {
		return tool + " {}"
	}
	if c, ok := jsontext.CanonicalText(args); ok && jsontext.Kind(args) == '{' {
		return tool + " " + c
	}
	return tool + " " + string(args)
}

// FormatLookups returns the appended item's text, in the manual's format:
// the Banner, then for each lookup a blank line, "tool {args}:" and its
// result text on the lines below.
func FormatLookups(lookups []Lookup) string {
	var b strings.Builder
	b.WriteString(Banner)
	for _, l := range lookups {
		b.WriteString("\n\n")
		b.WriteString(l.Tool)
		b.WriteByte(' ')
		if len(l.Args) == 0 {
			b.WriteString("{}")
		} else {
			b.Write(l.Args)
		}
		b.WriteString(":\n")
		b.WriteString(l.Text)
	}
	return b.String()
}

// ParseLookups reads an appended item's text: ok is false when it does not
// start with the Banner. A lookup starts at a line "tool {args}:" whose
// arguments are one JSON object, after a blank line; its result text is
// every line up to the blank line before the next such line, or to the
// end, so a result text may hold blank lines. Args come back canonical
// (members sorted).
func ParseLookups(text string) (lookups []Lookup, ok bool) {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	first, rest, _ := strings.Cut(text, "\n")
	if strings.TrimSpace(first) != Banner {
		return nil, false
	}
	lines := strings.Split(rest, "\n")
	var cur *Lookup
	var body []string
	flush := func() {
		if cur == nil {
			return
		}
		for len(body) > 0 && body[len(body)-1] == "" {
			body = body[:len(body)-1]
		}
		cur.Text = strings.Join(body, "\n")
		lookups = append(lookups, *cur)
		cur, body = nil, nil
	}
	for i, line := range lines {
		if cur == nil || i > 0 && lines[i-1] == "" {
			if tool, args, isHeader := lookupHeader(line); isHeader {
				flush()
				cur = &Lookup{Tool: tool, Args: args}
				continue
			}
		}
		if cur != nil {
			body = append(body, line)
		}
	}
	flush()
	return lookups, true
}

// lookupHeader reads a "tool {args}:" line.
func lookupHeader(line string) (tool string, args json.RawMessage, ok bool) {
	tool, rest, found := strings.Cut(line, " ")
	if !found || tool == "" || !strings.HasSuffix(rest, ":") {
		return "", nil, false
	}
	raw := []byte(strings.TrimSuffix(rest, ":"))
	if jsontext.Kind(raw) != '{' {
		return "", nil, false
	}
	canon, ok := jsontext.CanonicalText(raw)
	if !ok {
		return "", nil, false
	}
	return tool, json.RawMessage(canon), true
}

// AppendText returns the response line resp (a tools/call result, valid
// JSON, without terminator) with one more text item, holding text, at the
// end of result.content; every other byte stays as the server sent it. ok
// is false when resp has no result with a content list.
func AppendText(resp []byte, text string) (_ []byte, ok bool) {
	result, found := jsontext.Lookup(resp, "result")
	if !found || jsontext.Kind(result) != '{' {
		return nil, false
	}
	content, found := jsontext.Lookup(result, "content")
	if !found || jsontext.Kind(content) != '[' {
		return nil, false
	}
	end := jsontext.Offset(resp, content) + len(content) - 1 // the closing ]
	empty := jsontext.Len(content) == 0
	item := []byte(`{"type":"text","text":`)
	item = jsontext.AppendString(item, text, jsontext.Plain)
	item = append(item, '}')
	out := make([]byte, 0, len(resp)+len(item)+1)
	out = append(out, resp[:end]...)
	if !empty {
		out = append(out, ',')
	}
	out = append(out, item...)
	return append(out, resp[end:]...), true
}
