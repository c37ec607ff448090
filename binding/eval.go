package binding

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/hoist-mcp/hoist/jsontext"
)

// Result is one tool result a binding may read. Bindings read its JSON text
// directly, skipping what their paths pass by; Doc parses it whole, once.
// A Result caches what it learns of its text, so it is not safe for
// concurrent use.
type Result struct {
	Tool string
	Text string
	// Args are the arguments of the call it answers, as sent (a JSON
	// object), read by $args; "" when unknown.
	Args string

	args *Result // Args as a result, made on the first $args
	// yr is the latest year of a date in Text, when yearDone (year).
	yr       string
	yearDone bool
	lines    []string
	lined    bool
	doc      any
	parsed   bool
	valid    int8 // 0 unknown, 1 one JSON value, 2 not JSON
	// objects indexes the objects of Text that paths have walked into: the
	// members of each, found once. Serving tries many bindings on one
	// result, so each object is scanned once, not once per binding.
	objects []object
	// once are objects walked into once: a second visit indexes them.
	once  [4]int
	nOnce int
}

// object is the index of one object of a result's text.
type object struct {
	at      int // its offset in the text
	members []entry
}

// entry is one member of an indexed object: its name (raw, as in the text;
// decoded only when it has escapes) and where its value is.
type entry struct {
	name       span
	decoded    string
	escaped    bool
	start, end int
}

// span is where a token is in a result's text.
type span struct{ start, end int }

// NewResult returns the result of a call of tool that answered text.
func NewResult(tool, text string) *Result { return &Result{Tool: tool, Text: text} }

// Doc returns the result's document: its text parsed as JSON (numbers as
// json.Number), or the text itself as a string when it is not one JSON value.
func (r *Result) Doc() any {
	if !r.parsed {
		r.parsed = true
		r.doc = parseDoc(r.Text)
	}
	return r.doc
}

// Lines returns the result's text line by line: each line without its end
// and its surrounding spaces, empty ones left out ($lines).
func (r *Result) Lines() []string {
	if !r.lined {
		r.lined = true
		for line := range strings.SplitSeq(r.Text, "\n") {
			if line = strings.TrimSpace(line); line != "" {
				r.lines = append(r.lines, line)
			}
		}
	}
	return r.lines
}

// argsResult returns the call's arguments as a result, for $args.
func (r *Result) argsResult() *Result {
	if r.args == nil {
		r.args = NewResult(r.Tool, r.Args)
		if r.Args == "" {
			r.args.Text = "{}"
		}
	}
	return r.args
}

// ev is one evaluation: what it walks with, and its output. at[k] is the
// fan-out element values[k] came from, kept only when at is not nil.
type ev struct {
	said *Said
	out  []any
	at   []int
	keep bool // keep at
}

func (e *ev) emit(v any, elem int) {
	e.out = append(e.out, v)
	if e.keep {
		e.at = append(e.at, elem)
	}
}

// eval evaluates path over the result's document: over the parsed document
// when Doc has built it, else over its JSON text directly, which skips what
// the path passes by.
func (r *Result) eval(path []step, e *ev) fail {
	if r.parsed {
		return walkPath(r.doc, path, 0, e, -1)
	}
	if r.valid == 0 {
		r.valid = 2
		// One pass validates the text and finds its members, which the
		// bindings of a site read one after another.
		if top, ok := jsontext.ValidMembers(jsontext.StringBytes(r.Text)); ok {
			r.valid = 1
			if len(top) > 0 {
				r.index(top)
			}
		}
	}
	if r.valid == 2 {
		return walkPath(r.Text, path, 0, e, -1)
	}
	view := jsontext.StringBytes(r.Text)
	failed, why := r.walkText(view, view, path, e, -1)
	if failed >= 0 {
		return fail{failed, why}
	}
	return noFail
}

// walkText evaluates path over v, valid JSON within text (view is text's
// bytes), without parsing more than the values it returns: members and
// elements it passes are skipped. It emits the values to e; failed is the
// index of the step that named nothing, or -1. A repeated member name
// counts as its last occurrence, as it does in a parsed document.
func (r *Result) walkText(view, v []byte, path []step, e *ev, elem int) (failed int, why string) {
	for i, st := range path {
		switch {
		case st.all:
			if jsontext.Kind(v) != '[' {
				return i, "not a list"
			}
			k := 0
			for el := range jsontext.Elements(v) {
				r.walkText(view, el, path[i+1:], e, k) // elements without it are skipped
				k++
			}
			return -1, ""
		case st.said:
			switch jsontext.Kind(v) {
			case '[':
				if st.desc {
					var ds []int
					for el := range jsontext.Elements(v) {
						off := jsontext.Offset(view, el)
						ds = append(ds, e.said.described(jsontext.ParseValid(r.Text[off:off+len(el)])))
					}
					best, k := describedBest(ds), 0
					for el := range jsontext.Elements(v) {
						if best != describedNot && ds[k] == best {
							r.walkText(view, el, path[i+1:], e, k)
						}
						k++
					}
					return -1, ""
				}
				k := 0
				for el := range jsontext.Elements(v) {
					if e.said.named(r.valueAt(view, el, st.sub)) {
						r.walkText(view, el, path[i+1:], e, k)
					}
					k++
				}
			case '{':
				if st.desc {
					return i, "not a list"
				}
				k := 0
				for name, val := range jsontext.RawMembers(v) {
					test := any(jsontext.Unquote(name))
					if len(st.sub) > 0 {
						test = r.valueAt(view, val, st.sub)
					}
					if e.said.named(test) {
						r.walkText(view, val, path[i+1:], e, k)
					}
					k++
				}
			default:
				return i, "not a list or an object"
			}
			return -1, ""
		case st.pos:
			if jsontext.Kind(v) != '[' {
				return i, "not a list"
			}
			off := jsontext.Offset(view, v)
			list, _ := jsontext.ParseValid(r.Text[off : off+len(v)]).([]any)
			k, ok := e.said.Pick(list)
			if !ok {
				return i, "no element said by position"
			}
			j := 0
			for el := range jsontext.Elements(v) {
				if j == k {
					v = el
					break
				}
				j++
			}
		case st.isIdx:
			if jsontext.Kind(v) != '[' {
				return i, "not a list"
			}
			k := st.index
			if k < 0 {
				k += jsontext.Len(v)
			}
			var found []byte
			j := 0
			for el := range jsontext.Elements(v) {
				if j == k {
					found = el
					break
				}
				j++
			}
			if k < 0 || found == nil {
				return i, "index out of range"
			}
			v = found
		default:
			if jsontext.Kind(v) != '{' {
				return i, "not an object"
			}
			at, ok := r.member(view, v, st.name)
			if !ok {
				return i, "no such member"
			}
			v = view[at.start:at.end]
		}
	}
	off := jsontext.Offset(view, v)
	e.emit(jsontext.ParseValid(r.Text[off:off+len(v)]), elem) // valid: the text was; strings share its memory
	return -1, ""
}

// valueAt returns the value at path (no fan-out) within v, or nil.
func (r *Result) valueAt(view, v []byte, path []step) any {
	var one ev
	if failed, _ := r.walkText(view, v, path, &one, -1); failed >= 0 || len(one.out) != 1 {
		return nil
	}
	return one.out[0]
}

// member finds the member name of the object obj, within view, from the
// object's index, made on its first visit; the last of a repeated name
// wins.
func (r *Result) member(view, obj []byte, name string) (span, bool) {
	off := jsontext.Offset(view, obj)
	var idx *object
	for i := range r.objects {
		if r.objects[i].at == off {
			idx = &r.objects[i]
			break
		}
	}
	if idx == nil && !r.seenOnce(off) {
		// A first visit scans the object; most results are read by few
		// bindings, and an index costs more than it saves for them.
		v, ok := jsontext.Lookup(obj, name)
		if !ok {
			return span{}, false
		}
		vs := jsontext.Offset(view, v)
		return span{vs, vs + len(v)}, true
	}
	if idx == nil {
		o := object{at: off}
		for tok, v := range jsontext.RawMembers(obj) {
			ts, vs := jsontext.Offset(view, tok), jsontext.Offset(view, v)
			e := entry{name: span{ts + 1, ts + len(tok) - 1}, start: vs, end: vs + len(v)}
			if bytes.IndexByte(tok, '\\') >= 0 {
				e.escaped, e.decoded = true, jsontext.Unquote(tok)
			}
			o.members = append(o.members, e)
		}
		if r.objects == nil {
			r.objects = make([]object, 0, 4)
		}
		r.objects = append(r.objects, o)
		idx = &r.objects[len(r.objects)-1]
	}
	for i := len(idx.members) - 1; i >= 0; i-- {
		e := &idx.members[i]
		if e.escaped && e.decoded == name || !e.escaped && string(view[e.name.start:e.name.end]) == name {
			return span{e.start, e.end}, true
		}
	}
	return span{}, false
}

// index indexes the outermost object of the text from its members' spans.
func (r *Result) index(top []jsontext.Span) {
	view := jsontext.StringBytes(r.Text)
	o := object{at: top[0].NameStart - 1, members: make([]entry, len(top))}
	for o.at > 0 && view[o.at] != '{' {
		o.at--
	}
	for i, m := range top {
		tok := view[m.NameStart:m.NameEnd]
		e := entry{name: span{m.NameStart + 1, m.NameEnd - 1}, start: m.ValueStart, end: m.ValueEnd}
		if bytes.IndexByte(tok, '\\') >= 0 {
			e.escaped, e.decoded = true, jsontext.Unquote(tok)
		}
		o.members[i] = e
	}
	r.objects = append(r.objects, o)
}

// seenOnce reports whether the object at off was visited before, and
// notes the visit.
func (r *Result) seenOnce(off int) bool {
	for _, o := range r.once[:r.nOnce] {
		if o == off {
			return true
		}
	}
	if r.nOnce < len(r.once) {
		r.once[r.nOnce] = off
		r.nOnce++
		return false
	}
	return true // many objects: index them all from now on
}

// parseDoc returns text parsed as JSON, or text itself when it is not JSON.
func parseDoc(text string) any {
	if v, ok := jsontext.ParseString(text); ok {
		return v
	}
	return text
}

// Scope is what a binding reads: the site's result, the results so far by
// call index, and what the customer said so far. Learning builds one along
// an episode (flow.ScopeAt); the proxy and hoist-procedure build one as
// results arrive (Add) and the conversation grows (Said.Add).
type Scope struct {
	// Site is the result of the call that just returned: $text, $result,
	// $args and $lines.
	Site *Result
	// Calls are the results by call index ($call[N]); nil where a call has no
	// result yet. $last[tool] reads the latest non-nil entry of that tool.
	Calls []*Result
	// Said is what the customer said so far ($said, [said]).
	Said Said
	// Agent is what the agent said since the customer's last message (the
	// assistant's lines, Hear): the words it says before a call may say
	// what it is about to do ("Let me pull up your account details").
	// Only agent said "word" conditions read it, never $said or [said]:
	// the agent repeating an id is not the customer naming it.
	Agent Said
}

// Hear records a line of the conversation: the customer's (role "user")
// joins Said and ends the agent's words since its last message; the
// agent's (role "assistant") joins Agent. Other roles are not heard.
func (s *Scope) Hear(role, text string) {
	switch role {
	case "user":
		s.Said.Add(text)
		if s.Agent.Len() > 0 {
			s.Agent = Said{}
		}
	case "assistant":
		s.Agent.Add(text)
	}
}

// Add records the result of call i (growing Calls as needed) and makes it
// the site.
func (s *Scope) Add(i int, r *Result) {
	for len(s.Calls) <= i {
		s.Calls = append(s.Calls, nil)
	}
	s.Calls[i] = r
	s.Site = r
}

// Last returns the latest result of tool in Calls, by call index, or nil.
func (s *Scope) Last(tool string) *Result {
	for i := len(s.Calls) - 1; i >= 0; i-- {
		if r := s.Calls[i]; r != nil && r.Tool == tool {
			return r
		}
	}
	return nil
}

// Eval evaluates the binding in a scope and returns its values: exactly one
// for a binding without a fan-out, one per element (possibly none) for a
// fan-out. Values are JSON-shaped Go values (string, json.Number, bool, nil,
// []any, map[string]any). A reference that names nothing returns an error
// wrapping ErrNoValue.
func (b Expr) Eval(s *Scope) ([]any, error) {
	e := ev{}
	if f := b.values(s, &e); f.why != "" {
		return nil, b.failure(f)
	}
	return e.out, nil
}

// fail says where an evaluation named nothing: the path step (-1: the root)
// and why. The error is built only when a caller wants it, since serving
// tries bindings that do not bind all the time.
type fail struct {
	step int
	why  string
}

var noFail = fail{}

func (b Expr) failure(f fail) error {
	if f.step < 0 || len(b.path) == 0 {
		return fmt.Errorf("%s: %s: %w", b, f.why, ErrNoValue)
	}
	return b.noValue(min(f.step, len(b.path)-1), f.why)
}

// values is Eval into e, without the error.
func (b Expr) values(s *Scope, e *ev) fail {
	if s != nil {
		e.said = &s.Said
	}
	switch b.root {
	case rootConst:
		if b.val == nil {
			e.emit(nil, -1)
		} else {
			e.emit(parseDoc(string(b.val)), -1)
		}
		return noFail
	case rootText:
		if s == nil || s.Site == nil {
			return fail{-1, "no site result"}
		}
		e.emit(s.Site.Text, -1)
		return noFail
	case rootResult:
		if s == nil || s.Site == nil {
			return fail{-1, "no site result"}
		}
		return s.Site.eval(b.path, e)
	case rootArgs:
		if s == nil || s.Site == nil {
			return fail{-1, "no site result"}
		}
		return s.Site.argsResult().eval(b.path, e)
	case rootCall:
		if s == nil || b.index >= len(s.Calls) || s.Calls[b.index] == nil {
			return fail{-1, "call " + strconv.Itoa(b.index) + " has no result"}
		}
		return s.Calls[b.index].eval(b.path, e)
	case rootLast:
		var r *Result
		if s != nil {
			r = s.Last(b.tool)
		}
		if r == nil {
			return fail{-1, "no result of " + b.tool}
		}
		return r.eval(b.path, e)
	case rootSaid:
		if s == nil {
			return fail{-1, "no conversation"}
		}
		return walkPath(s.Said.values(b.arg, s), b.path, 0, e, -1)
	case rootLines:
		if s == nil || s.Site == nil {
			return fail{-1, "no site result"}
		}
		lines := s.Site.Lines()
		list := make([]any, 0, len(lines))
		for _, l := range lines {
			if b.arg == "" {
				list = append(list, l)
			} else if c, ok := capture(b.arg, l); ok {
				list = append(list, c)
			}
		}
		return walkPath(list, b.path, 0, e, -1)
	case rootConcat:
		return b.concat(s, e)
	case rootArray:
		var in ev
		if f := b.parts[0].values(s, &in); f.why != "" {
			return f
		}
		e.emit(append([]any{}, in.out...), -1)
		return noFail
	}
	return fail{-1, "unknown root"}
}

// concat evaluates a template: each part's values as text, joined; parts
// that fan out (over one list) give one value per element.
func (b Expr) concat(s *Scope, e *ev) fail {
	type part struct {
		text []string
		at   []int
	}
	parts := make([]part, len(b.parts))
	for i, p := range b.parts {
		pe := ev{keep: p.fan}
		if f := p.values(s, &pe); f.why != "" {
			return f
		}
		for _, v := range pe.out {
			t, ok := textOf(v)
			if !ok {
				return fail{-1, "a template's part is not text"}
			}
			parts[i].text = append(parts[i].text, t)
		}
		parts[i].at = pe.at
		if !p.fan && len(parts[i].text) != 1 {
			return fail{-1, "a template's part has no single value"}
		}
	}
	if !b.fan {
		var sb strings.Builder
		for _, p := range parts {
			sb.WriteString(p.text[0])
		}
		e.emit(sb.String(), -1)
		return noFail
	}
	// The elements every fanned part has, in the first one's order.
	var first *part
	for i, p := range b.parts {
		if p.fan {
			first = &parts[i]
			break
		}
	}
	for k, elem := range first.at {
		var sb strings.Builder
		ok := true
		for i, p := range b.parts {
			if !p.fan {
				sb.WriteString(parts[i].text[0])
				continue
			}
			j := k
			if &parts[i] != first {
				j = indexOf(parts[i].at, elem)
			}
			if j < 0 {
				ok = false
				break
			}
			sb.WriteString(parts[i].text[j])
		}
		if ok {
			e.emit(sb.String(), elem)
		}
	}
	return noFail
}

func indexOf(at []int, elem int) int {
	for j, a := range at {
		if a == elem {
			return j
		}
	}
	return -1
}

// textOf returns a scalar as template text: a string as it is, a number's
// digits, true or false.
func textOf(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case json.Number:
		return string(x), true
	case bool:
		return strconv.FormatBool(x), true
	}
	return "", false
}

// capture returns what the * of pattern matches in line, when the line
// matches it whole.
func capture(pattern, line string) (string, bool) {
	star := strings.IndexByte(pattern, '*')
	pre, suf := pattern[:star], pattern[star+1:]
	if len(line) < len(pre)+len(suf)+1 || !strings.HasPrefix(line, pre) || !strings.HasSuffix(line, suf) {
		return "", false
	}
	return line[len(pre) : len(line)-len(suf)], true
}

// EvalDoc evaluates the binding's path over one JSON document, as if it were
// the site's result: $result, $call[N] and $last[tool] all read doc, $text
// reads its JSON text, and a constant is itself.
func (b Expr) EvalDoc(doc json.RawMessage) ([]any, error) {
	r := NewResult("", string(doc))
	return b.Eval(&Scope{Site: r, Calls: []*Result{r}})
}

// walkPath evaluates path over a parsed document v; elem is the fan-out
// element v is in (-1 for none).
func walkPath(v any, path []step, base int, e *ev, elem int) fail {
	for i, st := range path {
		switch {
		case st.all:
			arr, isArr := v.([]any)
			if !isArr {
				return fail{base + i, "not a list"}
			}
			for k, el := range arr {
				walkPath(el, path[i+1:], base+i+1, e, k) // an element without the member is skipped
			}
			return noFail
		case st.said:
			switch x := v.(type) {
			case []any:
				if st.desc {
					ds := make([]int, len(x))
					for k, el := range x {
						ds[k] = e.said.described(el)
					}
					best := describedBest(ds)
					for k, el := range x {
						if best != describedNot && ds[k] == best {
							walkPath(el, path[i+1:], base+i+1, e, k)
						}
					}
					return noFail
				}
				for k, el := range x {
					if e.said.named(docAt(el, st.sub)) {
						walkPath(el, path[i+1:], base+i+1, e, k)
					}
				}
			case map[string]any:
				if st.desc {
					return fail{base + i, "not a list"}
				}
				keys := make([]string, 0, len(x))
				for k := range x {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				for k, name := range keys {
					test := any(name)
					if len(st.sub) > 0 {
						test = docAt(x[name], st.sub)
					}
					if e.said.named(test) {
						walkPath(x[name], path[i+1:], base+i+1, e, k)
					}
				}
			default:
				return fail{base + i, "not a list or an object"}
			}
			return noFail
		case st.pos:
			arr, isArr := v.([]any)
			if !isArr {
				return fail{base + i, "not a list"}
			}
			k, ok := e.said.Pick(arr)
			if !ok {
				return fail{base + i, "no element said by position"}
			}
			v = arr[k]
		case st.isIdx:
			arr, isArr := v.([]any)
			if !isArr {
				return fail{base + i, "not a list"}
			}
			k := st.index
			if k < 0 {
				k += len(arr)
			}
			if k < 0 || k >= len(arr) {
				return fail{base + i, "index out of range"}
			}
			v = arr[k]
		default:
			obj, isObj := v.(map[string]any)
			if !isObj {
				return fail{base + i, "not an object"}
			}
			m, found := obj[st.name]
			if !found {
				return fail{base + i, "no such member"}
			}
			v = m
		}
	}
	e.emit(v, elem)
	return noFail
}

// docAt returns the value at path (no fan-out) in a parsed document, or nil.
func docAt(v any, path []step) any {
	var one ev
	if f := walkPath(v, path, 0, &one, -1); f.why != "" || len(one.out) != 1 {
		return nil
	}
	return one.out[0]
}

func (b Expr) noValue(i int, why string) error {
	at := Expr{root: b.root, index: b.index, tool: b.tool, arg: b.arg, path: b.path[:i+1]}
	return fmt.Errorf("%s: %s: %w", at, why, ErrNoValue)
}

// Args evaluates a lookup's argument bindings in a scope and returns its
// arguments as JSON objects (members sorted by name): one object, or, when
// bindings fan out, one per element, at most max (0: no limit), in order.
// Arguments that fan out over the same list take the same element's values
// (they zip); fan-outs over different lists give every combination. A
// binding with no value gives an error wrapping ErrNoValue; a fan-out over
// an empty list gives no objects.
func Args(args map[string]Expr, s *Scope, max int) ([]json.RawMessage, error) {
	names := make([]string, 0, len(args))
	for k := range args {
		names = append(names, k)
	}
	sort.Strings(names)
	out, bad, f := bind(names, args, s, max)
	if bad >= 0 {
		return nil, fmt.Errorf("argument %s: %w", names[bad], args[names[bad]].failure(f))
	}
	return out, nil
}

// Bind is Args for a caller that tries many bindings and needs no error:
// names are args' names, sorted (made once by the caller), and ok is false
// when an argument has no value. Serving a flow calls it on every site.
func Bind(names []string, args map[string]Expr, s *Scope, max int) (out []json.RawMessage, ok bool) {
	out, bad, _ := bind(names, args, s, max)
	return out, bad < 0
}

// argVals are one argument's values: one, or one per element of the list
// its group fans out over.
type argVals struct {
	vals []any
	at   []int
}

// bind is Args over sorted argument names; bad is the index of the
// argument that did not bind, or -1.
func bind(names []string, args map[string]Expr, s *Scope, max int) (out []json.RawMessage, bad int, f fail) {
	var one [4]argVals
	vals := one[:0]
	if len(names) > len(one) {
		vals = make([]argVals, 0, len(names))
	}
	// Groups of arguments that fan out over one list zip: each group is a
	// dimension whose length is the number of elements all of them have.
	var keys [4]string
	fanKeys := keys[:0]
	// The arguments' values share one backing array while they fit: most
	// arguments have one value, and a decision binds many lookups.
	pool := make([]any, 0, 2*len(names))
	for i, k := range names {
		x := args[k]
		e := ev{keep: x.fan, out: pool[len(pool):]}
		room := cap(pool) - len(pool)
		if f := x.values(s, &e); f.why != "" {
			return nil, i, f
		}
		if len(e.out) <= room {
			pool = pool[:len(pool)+len(e.out)] // appended in place
		}
		vals = append(vals, argVals{e.out[:len(e.out):len(e.out)], e.at})
		if x.fan && !containsString(fanKeys, x.fanKey) {
			fanKeys = append(fanKeys, x.fanKey)
		}
	}
	if len(fanKeys) == 0 {
		return []json.RawMessage{appendObject(names, vals, nil)}, -1, noFail
	}
	// Each group's elements: those every argument of it has, in order.
	dims := make([][]int, len(fanKeys))
	for g, key := range fanKeys {
		var elems []int
		firstArg := true
		for i, k := range names {
			x := args[k]
			if !x.fan || x.fanKey != key {
				continue
			}
			if firstArg {
				elems = append(elems, vals[i].at...)
				firstArg = false
				continue
			}
			kept := elems[:0]
			for _, el := range elems {
				if indexOf(vals[i].at, el) >= 0 {
					kept = append(kept, el)
				}
			}
			elems = kept
		}
		dims[g] = elems
	}
	n := 1
	for _, d := range dims {
		n *= len(d)
	}
	if max > 0 && n > max {
		n = max
	}
	out = make([]json.RawMessage, 0, n)
	pos := make([]int, len(dims))
	pick := make([]int, len(names)) // each argument's index into its values
	for len(out) < n {
		for i, k := range names {
			x := args[k]
			if !x.fan {
				pick[i] = 0
				continue
			}
			g := indexOfString(fanKeys, x.fanKey)
			pick[i] = indexOf(vals[i].at, dims[g][pos[g]])
		}
		out = append(out, appendObject(names, vals, pick))
		for g := len(pos) - 1; g >= 0; g-- {
			pos[g]++
			if pos[g] < len(dims[g]) {
				break
			}
			pos[g] = 0
		}
	}
	return out, -1, noFail
}

// appendObject returns the arguments object of each name's picked value
// (pick nil: the first).
func appendObject(names []string, vals []argVals, pick []int) json.RawMessage {
	raw := make([]byte, 1, 64)
	raw[0] = '{'
	for i, k := range names {
		if i > 0 {
			raw = append(raw, ',')
		}
		raw = jsontext.AppendString(raw, k, jsontext.HTML)
		raw = append(raw, ':')
		j := 0
		if pick != nil {
			j = pick[i]
		}
		raw = jsontext.AppendValue(raw, vals[i].vals[j], jsontext.HTML)
	}
	return append(raw, '}')
}

func containsString(ss []string, s string) bool { return indexOfString(ss, s) >= 0 }

func indexOfString(ss []string, s string) int {
	for i, x := range ss {
		if x == s {
			return i
		}
	}
	return -1
}
