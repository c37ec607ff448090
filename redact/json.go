package redact

import (
	"bytes"
	"strings"

	"github.com/hoist-mcp/hoist/jsonrpc"
	"github.com/hoist-mcp/hoist/mcplog"
)

// A rule says what to do with a JSON value at a place in a message.
type rule struct {
	mode    mode
	members map[string]*rule // obj: rules of the members named
	other   *rule            // obj: the rule of other members (nil: kept)
	elem    *rule            // obj mode on an array: the rule of each element
}

type mode uint8

const (
	keep    mode = iota // copied as it is
	deep                // every string and number replaced; keys kept
	text                // a string that may hold JSON text: redacted inside it
	obj                 // an object's members or an array's elements by their rules
	lookup              // a run site's value: "tool {args}" has its args redacted
	binding             // a binding expression: a constant is redacted, a $reference kept
)

var (
	keepRule = &rule{mode: keep}
	deepRule = &rule{mode: deep}
	textRule = &rule{mode: text}
)

// The rules of MCP messages. Structure, methods, ids, tool names and the
// tools/list and initialize results are kept; arguments, results, error
// messages and logged data are redacted.
var (
	contentRule = &rule{mode: obj, elem: &rule{mode: obj, members: map[string]*rule{
		"text":     textRule,
		"data":     deepRule,
		"resource": {mode: obj, members: map[string]*rule{"text": textRule, "blob": deepRule, "uri": deepRule}},
		"uri":      deepRule,
	}}}
	// messagesRule is a prompt's or a sampling request's messages.
	messagesRule = &rule{mode: obj, elem: &rule{mode: obj, members: map[string]*rule{"content": {mode: obj, members: map[string]*rule{"text": textRule, "data": deepRule}}}}}
	resultRule   = &rule{mode: obj, members: map[string]*rule{
		"content":           contentRule,
		"contents":          contentRule,
		"structuredContent": deepRule,
		"messages":          messagesRule,
	}}
	errorRule = &rule{mode: obj, members: map[string]*rule{"message": textRule, "data": deepRule}}
	callRule  = &rule{mode: obj, members: map[string]*rule{
		"params": {mode: obj, members: map[string]*rule{"arguments": deepRule}},
	}}
	otherRequestRule = &rule{mode: obj, members: map[string]*rule{
		"params": {mode: obj, members: map[string]*rule{"data": deepRule, "message": textRule, "arguments": deepRule, "messages": messagesRule, "systemPrompt": textRule}},
	}}
	responseRule = &rule{mode: obj, members: map[string]*rule{"result": resultRule, "error": errorRule}}
	// contextRule is a context entry's message: {"role", "content"}.
	contextRule = &rule{mode: obj, members: map[string]*rule{"content": textRule}}
	// flowLogRule is a flow-log line (decision or run): the offered
	// lookups' arguments and constant bindings, and the lookups of a run's
	// sites, are values from results.
	flowLogRule = &rule{mode: obj, members: map[string]*rule{
		"offers": {mode: obj, elem: &rule{mode: obj, members: map[string]*rule{
			"args":    deepRule,
			"binding": {mode: obj, other: &rule{mode: binding}},
		}}},
		"sites": {mode: obj, elem: &rule{mode: obj, elem: &rule{mode: lookup}}},
	}}
)

// messageRule returns the rule of one JSON-RPC message (not a batch).
func messageRule(line []byte) *rule {
	m := jsonrpc.Classify(line)
	switch m.Kind {
	case jsonrpc.Request, jsonrpc.Notification:
		switch m.Method {
		case "tools/call":
			return callRule
		case "initialize", "tools/list", "resources/list", "prompts/list":
			return keepRule
		}
		return otherRequestRule
	case jsonrpc.Response:
		if isToolsList(line) {
			return keepRule
		}
		return responseRule
	}
	return deepRule
}

// isToolsList reports whether a response lists tools (or is initialize's),
// which is the server's description of itself and is kept.
func isToolsList(line []byte) bool {
	found := false
	jsonrpc.EachMember(line, func(key string, val []byte) {
		if key != "result" || len(val) == 0 || val[0] != '{' {
			return
		}
		jsonrpc.EachMember(val, func(k string, _ []byte) {
			if k == "tools" || k == "protocolVersion" || k == "resources" || k == "prompts" {
				found = true
			}
		})
	})
	return found
}

// rewriter rewrites JSON values by their rules, copying every byte it does
// not replace (whitespace, punctuation, keys) as it is.
type rewriter struct {
	p     *Pseudonymizer
	count func(kind string)
	src   []byte
	i     int
}

// value rewrites the valid JSON value b by r, appending to dst.
func (w *rewriter) value(dst, b []byte, r *rule) []byte {
	sw := *w
	sw.src, sw.i = b, 0
	return sw.walk(dst, r)
}

func (w *rewriter) space(dst []byte) []byte {
	start := w.i
	for w.i < len(w.src) {
		switch w.src[w.i] {
		case ' ', '\t', '\r', '\n':
			w.i++
			continue
		}
		break
	}
	return append(dst, w.src[start:w.i]...)
}

func (w *rewriter) walk(dst []byte, r *rule) []byte {
	dst = w.space(dst)
	if w.i >= len(w.src) {
		return dst
	}
	switch c := w.src[w.i]; {
	case c == '{':
		return w.object(dst, r)
	case c == '[':
		return w.array(dst, r)
	case c == '"':
		start := w.i
		w.skipString()
		tok := w.src[start:w.i]
		switch r.mode {
		case deep:
			return w.str(dst, tok)
		case text:
			return w.textValue(dst, tok)
		case lookup:
			return w.lookupValue(dst, tok)
		case binding:
			return w.bindingValue(dst, tok)
		}
		return append(dst, tok...)
	default:
		start := w.i
		for w.i < len(w.src) {
			switch w.src[w.i] {
			case ',', '}', ']', ' ', '\t', '\r', '\n':
				goto done
			}
			w.i++
		}
	done:
		tok := w.src[start:w.i]
		if (r.mode == deep || r.mode == text) && (tok[0] == '-' || isDigit(tok[0])) {
			w.count("number")
			return append(dst, w.p.Number(string(tok))...)
		}
		return append(dst, tok...)
	}
}

func (w *rewriter) object(dst []byte, r *rule) []byte {
	dst = append(dst, '{')
	w.i++
	for {
		dst = w.space(dst)
		switch w.src[w.i] {
		case '}':
			w.i++
			return append(dst, '}')
		case ',':
			dst = append(dst, ',')
			w.i++
			dst = w.space(dst)
		}
		start := w.i
		w.skipString()
		key := w.src[start:w.i]
		if (r.mode == deep || r.mode == text) && dataKey(key) {
			// A key with a run of four digits or more in a tool's value is
			// data, such as the id of a payment method keying its record
			// or a date keying a day's flights: mapped as the same value
			// is. Field names such as address1 are kept.
			dst = w.str(dst, key)
		} else {
			dst = append(dst, key...)
		}
		dst = w.space(dst)
		dst = append(dst, ':')
		w.i++
		sub := keepRule
		switch r.mode {
		case deep, text:
			sub = deepRule
		case obj:
			if m, ok := r.members[jsonrpc.Unquote(key)]; ok {
				sub = m
			} else if r.other != nil {
				sub = r.other
			}
		}
		dst = w.walk(dst, sub)
	}
}

func (w *rewriter) array(dst []byte, r *rule) []byte {
	dst = append(dst, '[')
	w.i++
	sub := keepRule
	switch r.mode {
	case deep, text:
		sub = deepRule
	case obj:
		if r.elem != nil {
			sub = r.elem
		}
	}
	for {
		dst = w.space(dst)
		switch w.src[w.i] {
		case ']':
			w.i++
			return append(dst, ']')
		case ',':
			dst = append(dst, ',')
			w.i++
		}
		dst = w.walk(dst, sub)
	}
}

func (w *rewriter) skipString() {
	w.i++
	for w.i < len(w.src) {
		switch w.src[w.i] {
		case '\\':
			w.i += 2
		case '"':
			w.i++
			return
		default:
			w.i++
		}
	}
}

// str replaces a JSON string token by its pseudonym.
func (w *rewriter) str(dst, tok []byte) []byte {
	s := unquote(tok)
	if s == "" {
		return append(dst, tok...)
	}
	ps, mapped := w.p.Mapped(s)
	if mapped {
		w.count(Kind(s))
	}
	if ps == s {
		return append(dst, tok...) // kept words, punctuation: the bytes as sent
	}
	return mcplog.AppendString(dst, ps)
}

// textValue replaces a string that may hold JSON text (a tool result, a
// message): JSON text is redacted inside, so its values map as the same
// values do elsewhere; other text is redacted as a string.
func (w *rewriter) textValue(dst, tok []byte) []byte {
	inner := appendUnquoted(make([]byte, 0, len(tok)), tok)
	t := bytes.TrimSpace(inner)
	if len(t) > 0 && (t[0] == '{' || t[0] == '[') && jsonrpc.Valid(inner) {
		out := w.value(nil, inner, deepRule)
		return mcplog.AppendString(dst, string(out))
	}
	return w.str(dst, tok)
}

// lookupValue redacts the arguments of a run site's "tool {args}".
func (w *rewriter) lookupValue(dst, tok []byte) []byte {
	s := unquote(tok)
	sp := strings.IndexByte(s, ' ')
	if sp < 0 || !jsonrpc.Valid([]byte(s[sp+1:])) {
		return append(dst, tok...) // ok, error, stop, an address
	}
	out := append([]byte(s[:sp+1]), w.value(nil, []byte(s[sp+1:]), deepRule)...)
	return mcplog.AppendString(dst, string(out))
}

// bindingValue redacts a constant binding ("standard", 42) and keeps a
// reference ($result.user_id), whose path names keys.
func (w *rewriter) bindingValue(dst, tok []byte) []byte {
	s := unquote(tok)
	t := strings.TrimSpace(s)
	if t == "" || t[0] == '$' || !jsonrpc.Valid([]byte(t)) {
		return append(dst, tok...)
	}
	out := w.value(nil, []byte(t), deepRule)
	return mcplog.AppendString(dst, string(out))
}

// JSON appends to dst the JSON value v (valid JSON) with its strings,
// numbers and keys with digits replaced as Dir replaces the values of a tool
// result: how a value of a flow (a constant binding) maps into the copy.
func (p *Pseudonymizer) JSON(dst, v []byte) []byte {
	w := &rewriter{p: p, count: func(string) {}}
	return w.value(dst, v, deepRule)
}

// dataKey reports whether a key (a JSON string token) holds a run of at
// least four digits.
func dataKey(key []byte) bool {
	run := 0
	for _, c := range key {
		if isDigit(c) {
			run++
			if run >= 4 {
				return true
			}
		} else {
			run = 0
		}
	}
	return false
}
