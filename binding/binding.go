package binding

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/hoist-mcp/hoist/jsontext"
)

// Expr is a parsed binding expression. The zero Expr is the constant
// null. An Expr is immutable and safe for concurrent use.
type Expr struct {
	root  rootKind
	index int    // $call[N]
	tool  string // $last[tool]
	path  []step
	val   json.RawMessage // the constant, compact
	fan   bool
}

type rootKind uint8

const (
	rootConst rootKind = iota
	rootText
	rootResult
	rootCall
	rootLast
)

type step struct {
	name  string // member name, when !isIdx && !all
	index int
	isIdx bool
	all   bool // [*]
}

// ErrNoValue is returned (wrapped) by Eval when the expression names nothing
// in the scope: a missing member, an index out of range, a call with no
// result. A lookup whose binding has no value is not made.
var ErrNoValue = errors.New("binding has no value")

// SyntaxError is a binding expression that does not parse: Pos is the byte
// offset in Expr where it goes wrong. Callers that read expressions from a
// file wrap it with the file and the field (see FieldError).
type SyntaxError struct {
	Expr string
	Pos  int
	Msg  string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("binding %q at offset %d: %s", e.Expr, e.Pos, e.Msg)
}

// Parse parses a binding expression (see the package documentation). Spaces
// around the expression are ignored; inside it they are not allowed except
// in quoted strings and constants.
func Parse(expr string) (Expr, error) {
	p := parser{src: expr, s: strings.TrimSpace(expr)}
	p.off = strings.Index(expr, p.s)
	if p.off < 0 {
		p.off = 0
	}
	b, err := p.parse()
	if err != nil {
		return Expr{}, err
	}
	return b, nil
}

// MustParse is Parse for expressions known to be good (tests,
// built-in procedures); it panics on a bad one.
func MustParse(expr string) Expr {
	b, err := Parse(expr)
	if err != nil {
		panic(err)
	}
	return b
}

// Const returns the binding of a constant value, which must marshal to JSON.
func Const(v any) (Expr, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return Expr{}, fmt.Errorf("encoding constant: %w", err)
	}
	return Expr{root: rootConst, val: jsontext.AppendCompact(nil, raw)}, nil
}

type parser struct {
	src string // the whole expression, for errors
	s   string // trimmed
	off int    // offset of s in src
	i   int
}

func (p *parser) fail(msg string, args ...any) error {
	return &SyntaxError{Expr: p.src, Pos: p.off + p.i, Msg: fmt.Sprintf(msg, args...)}
}

func (p *parser) parse() (Expr, error) {
	if p.s == "" {
		return Expr{}, p.fail("empty expression")
	}
	if p.s[0] != '$' {
		if !jsontext.ValidString(p.s) {
			return Expr{}, p.fail("want a reference starting with $ or a JSON constant such as \"text\" or 42")
		}
		return Expr{root: rootConst, val: jsontext.AppendCompact(nil, []byte(p.s))}, nil
	}
	var b Expr
	p.i = 1
	name := p.ident()
	switch name {
	case "text":
		b.root = rootText
	case "result":
		b.root = rootResult
	case "call":
		b.root = rootCall
		if !p.eat('[') {
			return Expr{}, p.fail("$call wants an index: $call[N]")
		}
		start := p.i
		for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
			p.i++
		}
		n, err := strconv.Atoi(p.s[start:p.i])
		if err != nil || n < 0 {
			p.i = start
			return Expr{}, p.fail("$call wants a call index 0, 1, …")
		}
		b.index = n
		if !p.eat(']') {
			return Expr{}, p.fail("want ] after the call index")
		}
	case "last":
		b.root = rootLast
		if !p.eat('[') {
			return Expr{}, p.fail("$last wants a tool name: $last[tool]")
		}
		if p.i < len(p.s) && p.s[p.i] == '"' {
			s, err := p.quoted()
			if err != nil {
				return Expr{}, err
			}
			b.tool = s
		} else {
			end := strings.IndexByte(p.s[p.i:], ']')
			if end < 0 {
				return Expr{}, p.fail("want ] after the tool name")
			}
			b.tool = p.s[p.i : p.i+end]
			p.i += end
		}
		if b.tool == "" {
			return Expr{}, p.fail("empty tool name")
		}
		if !p.eat(']') {
			return Expr{}, p.fail("want ] after the tool name")
		}
	case "":
		return Expr{}, p.fail("want $text, $result, $call[N] or $last[tool] after $")
	default:
		p.i = 1
		return Expr{}, p.fail("unknown root $%s: want $text, $result, $call[N] or $last[tool]", name)
	}
	for p.i < len(p.s) {
		if b.root == rootText {
			return Expr{}, p.fail("$text is the whole text and takes no path; use $result for a path into it")
		}
		switch p.s[p.i] {
		case '.':
			p.i++
			name := p.ident()
			if name == "" {
				return Expr{}, p.fail("want a member name after '.' (quote other names: [\"name\"])")
			}
			b.path = append(b.path, step{name: name})
		case '[':
			p.i++
			switch {
			case p.eat('*'):
				if b.fan {
					p.i--
					return Expr{}, p.fail("only one [*] fan-out per expression")
				}
				b.fan = true
				b.path = append(b.path, step{all: true})
			case p.i < len(p.s) && p.s[p.i] == '"':
				s, err := p.quoted()
				if err != nil {
					return Expr{}, err
				}
				b.path = append(b.path, step{name: s})
			default:
				start := p.i
				if p.i < len(p.s) && p.s[p.i] == '-' {
					p.i++
				}
				for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
					p.i++
				}
				n, err := strconv.Atoi(p.s[start:p.i])
				if err != nil {
					p.i = start
					return Expr{}, p.fail("want an index, [*] or a quoted name inside [ ]")
				}
				b.path = append(b.path, step{index: n, isIdx: true})
			}
			if !p.eat(']') {
				return Expr{}, p.fail("want ]")
			}
		default:
			return Expr{}, p.fail("unexpected %q: want .name, [N], [*] or [\"name\"]", p.s[p.i])
		}
	}
	return b, nil
}

func (p *parser) eat(c byte) bool {
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

func isNameByte(c byte) bool {
	return c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func (p *parser) ident() string {
	start := p.i
	for p.i < len(p.s) && isNameByte(p.s[p.i]) {
		p.i++
	}
	return p.s[start:p.i]
}

// quoted reads a JSON string starting at p.i.
func (p *parser) quoted() (string, error) {
	tok := []byte(p.s[p.i:])
	n, ok := jsontext.ValueLen(tok)
	if !ok || tok[0] != '"' {
		return "", p.fail("bad quoted name: want a JSON string")
	}
	p.i += n
	return jsontext.Unquote(tok[:n]), nil
}

// String returns the expression in its canonical form, which Parse
// reads back to an equal Expr.
func (b Expr) String() string {
	var sb strings.Builder
	switch b.root {
	case rootConst:
		if b.val == nil {
			return "null"
		}
		return string(b.val)
	case rootText:
		return "$text"
	case rootResult:
		sb.WriteString("$result")
	case rootCall:
		sb.WriteString("$call[")
		sb.WriteString(strconv.Itoa(b.index))
		sb.WriteByte(']')
	case rootLast:
		sb.WriteString("$last[")
		if b.tool == "" || strings.ContainsAny(b.tool, "]\"") || strings.TrimSpace(b.tool) != b.tool {
			sb.WriteString(strconv.Quote(b.tool))
		} else {
			sb.WriteString(b.tool)
		}
		sb.WriteByte(']')
	}
	for _, st := range b.path {
		switch {
		case st.all:
			sb.WriteString("[*]")
		case st.isIdx:
			sb.WriteByte('[')
			sb.WriteString(strconv.Itoa(st.index))
			sb.WriteByte(']')
		case isPlainName(st.name):
			sb.WriteByte('.')
			sb.WriteString(st.name)
		default:
			sb.WriteByte('[')
			sb.Write(jsontext.AppendString(nil, st.name, jsontext.HTML))
			sb.WriteByte(']')
		}
	}
	return sb.String()
}

func isPlainName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isNameByte(s[i]) {
			return false
		}
	}
	return true
}

// MarshalText writes the canonical expression, so a Expr is a JSON string
// in a flow.
func (b Expr) MarshalText() ([]byte, error) { return []byte(b.String()), nil }

// UnmarshalText parses an expression.
func (b *Expr) UnmarshalText(text []byte) error {
	nb, err := Parse(string(text))
	if err != nil {
		return err
	}
	*b = nb
	return nil
}

// IsConst reports whether the binding is a constant.
func (b Expr) IsConst() bool { return b.root == rootConst }

// FanOut reports whether the binding has a [*]: it gives one value per
// element, and its lookup is made once per value.
func (b Expr) FanOut() bool { return b.fan }

// Tool returns the tool a $last[tool] binding reads, else "".
func (b Expr) Tool() string { return b.tool }

// Equal reports whether two bindings are the same expression.
func (b Expr) Equal(o Expr) bool { return b.String() == o.String() }

// Result is one tool result a binding may read. Bindings read its JSON text
// directly, skipping what their paths pass by; Doc parses it whole, once.
// A Result caches what it learns of its text, so it is not safe for
// concurrent use.
type Result struct {
	Tool string
	Text string

	doc    any
	parsed bool
	valid  int8 // 0 unknown, 1 one JSON value, 2 not JSON
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

// eval evaluates path over the result's document: over the parsed document
// when Doc has built it, else over its JSON text directly, which skips what
// the path passes by.
func (r *Result) eval(b Expr) ([]any, fail) {
	if r.parsed {
		return b.walk(r.doc)
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
		return b.walk(r.Text)
	}
	view := jsontext.StringBytes(r.Text)
	vs, failed, why := r.walkText(view, view, b.path, nil)
	if failed >= 0 {
		return nil, fail{failed, why}
	}
	return vs, noFail
}

// walkText evaluates path over v, valid JSON within text (view is text's
// bytes), without parsing more than the values it returns: members and
// elements it passes are skipped. It appends the values to out; failed is
// the index of the step that named nothing, or -1. A repeated member name
// counts as its last occurrence, as it does in a parsed document.
func (r *Result) walkText(view, v []byte, path []step, out []any) (_ []any, failed int, why string) {
	for i, st := range path {
		switch {
		case st.all:
			if jsontext.Kind(v) != '[' {
				return out, i, "not a list"
			}
			for el := range jsontext.Elements(v) {
				out, _, _ = r.walkText(view, el, path[i+1:], out) // elements without it are skipped
			}
			return out, -1, ""
		case st.isIdx:
			if jsontext.Kind(v) != '[' {
				return out, i, "not a list"
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
				return out, i, "index out of range"
			}
			v = found
		default:
			if jsontext.Kind(v) != '{' {
				return out, i, "not an object"
			}
			at, ok := r.member(view, v, st.name)
			if !ok {
				return out, i, "no such member"
			}
			v = view[at.start:at.end]
		}
	}
	off := jsontext.Offset(view, v)
	val := jsontext.ParseValid(r.Text[off : off+len(v)]) // valid: the text was; strings share its memory
	return append(out, val), -1, ""
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

// Scope is what a binding reads: the site's result and the results so far,
// by call index. Learning builds one along an episode (flow.ScopeAt); the proxy
// and hoist-procedure build one as results arrive (Add).
type Scope struct {
	// Site is the result of the call that just returned: $text and $result.
	Site *Result
	// Calls are the results by call index ($call[N]); nil where a call has no
	// result yet. $last[tool] reads the latest non-nil entry of that tool.
	Calls []*Result
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
// for a binding without [*], one per element (possibly none) for a fan-out.
// Values are JSON-shaped Go values (string, json.Number, bool, nil,
// []any, map[string]any). A reference that names nothing returns an error
// wrapping ErrNoValue.
func (b Expr) Eval(s *Scope) ([]any, error) {
	vs, f := b.values(s)
	if f.why != "" {
		return nil, b.failure(f)
	}
	return vs, nil
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
	if f.step < 0 {
		return fmt.Errorf("%s: %s: %w", b, f.why, ErrNoValue)
	}
	return b.noValue(min(f.step, len(b.path)-1), f.why)
}

// values is Eval without the error.
func (b Expr) values(s *Scope) ([]any, fail) {
	switch b.root {
	case rootConst:
		if b.val == nil {
			return []any{nil}, noFail
		}
		return []any{parseDoc(string(b.val))}, noFail
	case rootText:
		if s == nil || s.Site == nil {
			return nil, fail{-1, "no site result"}
		}
		return []any{s.Site.Text}, noFail
	case rootResult:
		if s == nil || s.Site == nil {
			return nil, fail{-1, "no site result"}
		}
		return s.Site.eval(b)
	case rootCall:
		if s == nil || b.index >= len(s.Calls) || s.Calls[b.index] == nil {
			return nil, fail{-1, "call " + strconv.Itoa(b.index) + " has no result"}
		}
		return s.Calls[b.index].eval(b)
	case rootLast:
		var r *Result
		if s != nil {
			r = s.Last(b.tool)
		}
		if r == nil {
			return nil, fail{-1, "no result of " + b.tool}
		}
		return r.eval(b)
	}
	return nil, fail{-1, "unknown root"}
}

// EvalDoc evaluates the binding's path over one JSON document, as if it were
// the site's result: $result, $call[N] and $last[tool] all read doc, $text
// reads its JSON text, and a constant is itself.
func (b Expr) EvalDoc(doc json.RawMessage) ([]any, error) {
	r := NewResult("", string(doc))
	return b.Eval(&Scope{Site: r, Calls: []*Result{r}})
}

func (b Expr) walk(v any) ([]any, fail) { return walkPath(v, b.path, 0) }

func walkPath(v any, path []step, base int) ([]any, fail) {
	for i, st := range path {
		switch {
		case st.all:
			arr, isArr := v.([]any)
			if !isArr {
				return nil, fail{base + i, "not a list"}
			}
			out := make([]any, 0, len(arr))
			for _, e := range arr {
				vs, f := walkPath(e, path[i+1:], base+i+1)
				if f.why != "" {
					continue // an element without the member is skipped
				}
				out = append(out, vs...)
			}
			return out, noFail
		case st.isIdx:
			arr, isArr := v.([]any)
			if !isArr {
				return nil, fail{base + i, "not a list"}
			}
			k := st.index
			if k < 0 {
				k += len(arr)
			}
			if k < 0 || k >= len(arr) {
				return nil, fail{base + i, "index out of range"}
			}
			v = arr[k]
		default:
			obj, isObj := v.(map[string]any)
			if !isObj {
				return nil, fail{base + i, "not an object"}
			}
			m, found := obj[st.name]
			if !found {
				return nil, fail{base + i, "no such member"}
			}
			v = m
		}
	}
	return []any{v}, noFail
}

func (b Expr) noValue(i int, why string) error {
	at := Expr{root: b.root, index: b.index, tool: b.tool, path: b.path[:i+1]}
	return fmt.Errorf("%s: %s: %w", at, why, ErrNoValue)
}

// Args evaluates a lookup's argument bindings in a scope and returns its
// arguments as JSON objects (members sorted by name): one object, or, when
// bindings fan out, one per combination of their values, at most max (0: no
// limit), in order. A binding with no value gives an error wrapping
// ErrNoValue; a fan-out over an empty list gives no objects.
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

// bind is Args over sorted argument names; bad is the index of the
// argument that did not bind, or -1.
func bind(names []string, args map[string]Expr, s *Scope, max int) (out []json.RawMessage, bad int, f fail) {
	var one [4][]any
	vals := one[:0]
	if len(names) > len(one) {
		vals = make([][]any, 0, len(names))
	}
	n := 1
	for i, k := range names {
		vs, f := args[k].values(s)
		if f.why != "" {
			return nil, i, f
		}
		vals = append(vals, vs)
		n *= len(vs)
	}
	if max > 0 && n > max {
		n = max
	}
	out = make([]json.RawMessage, 0, n)
	var idx0 [4]int
	idx := idx0[:0]
	for range names {
		idx = append(idx, 0)
	}
	for len(out) < n {
		raw := make([]byte, 1, 64)
		raw[0] = '{'
		for i, k := range names {
			if i > 0 {
				raw = append(raw, ',')
			}
			raw = jsontext.AppendString(raw, k, jsontext.HTML)
			raw = append(raw, ':')
			raw = jsontext.AppendValue(raw, vals[i][idx[i]], jsontext.HTML)
		}
		raw = append(raw, '}')
		out = append(out, raw)
		for i := len(idx) - 1; i >= 0; i-- {
			idx[i]++
			if idx[i] < len(vals[i]) {
				break
			}
			idx[i] = 0
		}
	}
	return out, -1, noFail
}
