package redact

import (
	"strings"

	"github.com/hoist-mcp/hoist/jsonrpc"
	"github.com/hoist-mcp/hoist/jsontext"
	"github.com/hoist-mcp/hoist/mcpmsg"
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
		if m.Result != nil && mcpmsg.KindOfResult(m.Result) == mcpmsg.ServerResult {
			return keepRule // the server's description of itself
		}
		return responseRule
	}
	return deepRule
}

// rewriter rewrites JSON values by their rules, copying every byte it does
// not replace (whitespace, punctuation, keys) as it is.
type rewriter struct {
	p     *Pseudonymizer
	count func(kind string)
}

// value rewrites the valid JSON value b (whitespace around it kept) by r,
// appending to dst.
func (w *rewriter) value(dst, b []byte, r *rule) []byte {
	start := 0
	for start < len(b) && isSpace(b[start]) {
		start++
	}
	end := len(b)
	for end > start && isSpace(b[end-1]) {
		end--
	}
	dst = append(dst, b[:start]...)
	if start < end {
		dst = w.walk(dst, b[start:end], r)
	}
	return append(dst, b[end:]...)
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// walk rewrites one value token v (no whitespace around it).
func (w *rewriter) walk(dst, v []byte, r *rule) []byte {
	switch c := v[0]; {
	case c == '{':
		return w.object(dst, v, r)
	case c == '[':
		return w.array(dst, v, r)
	case c == '"':
		switch r.mode {
		case deep:
			return w.str(dst, v)
		case text:
			return w.textValue(dst, v)
		case lookup:
			return w.lookupValue(dst, v)
		case binding:
			return w.bindingValue(dst, v)
		}
		return append(dst, v...)
	default:
		if (r.mode == deep || r.mode == text) && (c == '-' || isDigit(c)) {
			w.count("number")
			return append(dst, w.p.Number(string(v))...)
		}
		return append(dst, v...)
	}
}

// object rewrites the object v member by member; the bytes between tokens
// are copied as they are.
func (w *rewriter) object(dst, v []byte, r *rule) []byte {
	prev := 0
	for key, val := range jsontext.RawMembers(v) {
		ks := jsontext.Offset(v, key)
		dst = append(dst, v[prev:ks]...)
		if (r.mode == deep || r.mode == text) && dataKey(key) {
			// A key with a run of four digits or more in a tool's value is
			// data, such as the id of a payment method keying its record
			// or a date keying a day's flights: mapped as the same value
			// is. Field names such as address1 are kept.
			dst = w.str(dst, key)
		} else {
			dst = append(dst, key...)
		}
		vs := jsontext.Offset(v, val)
		dst = append(dst, v[ks+len(key):vs]...)
		sub := keepRule
		switch r.mode {
		case deep, text:
			sub = deepRule
		case obj:
			if m, ok := r.members[jsontext.Unquote(key)]; ok {
				sub = m
			} else if r.other != nil {
				sub = r.other
			}
		}
		dst = w.walk(dst, val, sub)
		prev = vs + len(val)
	}
	if prev == 0 {
		return append(dst, v...) // no members: copied whole
	}
	return append(dst, v[prev:]...)
}

// array rewrites the array v element by element.
func (w *rewriter) array(dst, v []byte, r *rule) []byte {
	sub := keepRule
	switch r.mode {
	case deep, text:
		sub = deepRule
	case obj:
		if r.elem != nil {
			sub = r.elem
		}
	}
	prev := 0
	for el := range jsontext.Elements(v) {
		es := jsontext.Offset(v, el)
		dst = append(dst, v[prev:es]...)
		dst = w.walk(dst, el, sub)
		prev = es + len(el)
	}
	if prev == 0 {
		return append(dst, v...)
	}
	return append(dst, v[prev:]...)
}

// str replaces a JSON string token by its pseudonym.
func (w *rewriter) str(dst, tok []byte) []byte {
	s := jsontext.Unquote(tok)
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
	return jsontext.AppendString(dst, ps, jsontext.Plain)
}

// textValue replaces a string that may hold JSON text (a tool result, a
// message): JSON text is redacted inside, so its values map as the same
// values do elsewhere; other text is redacted as a string.
func (w *rewriter) textValue(dst, tok []byte) []byte {
	inner := jsontext.AppendUnquote(make([]byte, 0, len(tok)), tok)
	if k := jsontext.Kind(inner); (k == '{' || k == '[') && jsontext.Valid(inner) {
		out := w.value(nil, inner, deepRule)
		return jsontext.AppendString(dst, string(out), jsontext.Plain)
	}
	return w.str(dst, tok)
}

// lookupValue redacts the arguments of a run site's "tool {args}".
func (w *rewriter) lookupValue(dst, tok []byte) []byte {
	s := jsontext.Unquote(tok)
	sp := strings.IndexByte(s, ' ')
	if sp < 0 || !jsontext.ValidString(s[sp+1:]) {
		return append(dst, tok...) // ok, error, stop, an address
	}
	out := append([]byte(s[:sp+1]), w.value(nil, []byte(s[sp+1:]), deepRule)...)
	return jsontext.AppendString(dst, string(out), jsontext.Plain)
}

// bindingValue redacts a constant binding ("standard", 42) and keeps a
// reference ($result.user_id), whose path names keys.
func (w *rewriter) bindingValue(dst, tok []byte) []byte {
	s := jsontext.Unquote(tok)
	t := strings.TrimSpace(s)
	if t == "" || t[0] == '$' || !jsontext.ValidString(t) {
		return append(dst, tok...)
	}
	out := w.value(nil, []byte(t), deepRule)
	return jsontext.AppendString(dst, string(out), jsontext.Plain)
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
