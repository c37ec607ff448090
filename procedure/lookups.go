package procedure

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/hoist-mcp/hoist/flow"
)

// AlsoLookedUp is the first line of the text item that hoist-mcp's active
// mode appends to the agent's result when a flow made lookups for it
// (hoist-mcp manual, "Active mode").
const AlsoLookedUp = "--- Also looked up automatically (current results; no need to repeat these calls) ---"

// Lookup is one call the proxy made on the agent's behalf, as the appended
// item reports it.
type Lookup struct {
	Tool string
	// Args are the call's arguments as JSON, canonical (members sorted).
	Args json.RawMessage
	// Text is the lookup's result text.
	Text string
}

// Key is the lookup's call, for matching: the tool and its canonical
// arguments.
func (l Lookup) Key() string { return callKey(l.Tool, l.Args) }

func callKey(tool string, args json.RawMessage) string { return tool + " " + string(args) }

// FormatLookups writes the item the proxy appends for lookups, in the
// manual's format: the AlsoLookedUp line, a blank line, then per lookup
// "tool {args}:" and its result text on the lines below, lookups separated
// by a blank line.
func FormatLookups(lookups []Lookup) string {
	var b strings.Builder
	b.WriteString(AlsoLookedUp)
	b.WriteString("\n")
	for _, l := range lookups {
		b.WriteString("\n")
		b.WriteString(l.Tool)
		b.WriteByte(' ')
		b.Write(l.Args)
		b.WriteString(":\n")
		b.WriteString(l.Text)
		b.WriteString("\n")
	}
	return b.String()
}

// ParseLookups reads an appended item: ok is false when text does not start
// with the AlsoLookedUp line. A lookup starts at a line "tool {args}:" whose
// arguments are one JSON object; its result text is every line up to the
// blank line before the next such line, or to the end. A result text may
// hold blank lines; only a blank line followed by a "tool {args}:" line ends
// it.
func ParseLookups(text string) (lookups []Lookup, ok bool) {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	first, rest, _ := strings.Cut(text, "\n")
	if strings.TrimSpace(first) != AlsoLookedUp {
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
		startsEntry := cur == nil || (i > 0 && lines[i-1] == "")
		if startsEntry {
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
	raw := strings.TrimSuffix(rest, ":")
	if !strings.HasPrefix(raw, "{") {
		return "", nil, false
	}
	canon, ok := canonicalObject([]byte(raw))
	if !ok {
		return "", nil, false
	}
	return tool, canon, true
}

// canonicalObject returns a JSON object with its members sorted and numbers
// kept as written, or false when raw is not one JSON object.
func canonicalObject(raw []byte) (json.RawMessage, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v map[string]any
	if err := dec.Decode(&v); err != nil || dec.More() || v == nil {
		return nil, false
	}
	return json.RawMessage(flow.Canonical(v)), true
}
