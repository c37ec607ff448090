package binding

import (
	"encoding/json"
	"errors"
	"fmt"
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
	arg   string // $said[kind]'s kind or shape, $lines[pattern]'s pattern
	path  []step
	val   json.RawMessage // the constant, compact
	fan   bool
	// parts are a template's parts (rootConcat), or the one expression an
	// array collects (rootArray).
	parts []Expr
	// fanKey names the list a fan-out walks: the expression up to its fan
	// step. Arguments that fan out over the same list take their values
	// from the same element (they zip); "" without a fan-out.
	fanKey string
}

type rootKind uint8

const (
	rootConst rootKind = iota
	rootText
	rootResult
	rootCall
	rootLast
	rootArgs   // $args: the site's call's arguments
	rootSaid   // $said[kind]: the values the customer said
	rootLines  // $lines, $lines["pattern"]: the site's text, line by line
	rootConcat // a + b: a template
	rootArray  // [expr]: a fan-out collected into one array
)

type step struct {
	name  string // member name, when !isIdx && !all && !said
	index int
	isIdx bool
	all   bool // [*]
	// said is the conversation filter [said] or [said.path]: a fan-out over
	// the elements (of a list) or members (of an object) that the customer
	// named, by the element itself, the member's name, or the value at sub.
	said bool
	sub  []step
	// pos is [said#]: the element of a list the customer picked by its
	// position ("the second one", "my most recent reservation"; Said.Pick).
	pos bool
	// desc is [said~]: a fan-out over the elements the customer described,
	// by any value the element holds ("the lamp", "the flight from ORD";
	// Said.Describes). said is set too.
	desc bool
}

// fans reports whether the step fans out.
func (s step) fans() bool { return s.all || s.said }

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
// in quoted strings and constants, and around a template's +.
func Parse(expr string) (Expr, error) {
	s := strings.TrimSpace(expr)
	off := strings.Index(expr, s)
	if off < 0 {
		off = 0
	}
	if cuts := templateCuts(s); len(cuts) > 0 {
		return parseTemplate(expr, s, off, cuts)
	}
	if len(s) > 2 && s[0] == '[' && s[1] == '$' {
		if s[len(s)-1] != ']' {
			return Expr{}, &SyntaxError{Expr: expr, Pos: off + len(s), Msg: "want ] to close the array"}
		}
		p := parser{src: expr, s: s[1 : len(s)-1], off: off + 1}
		in, err := p.parse()
		if err != nil {
			return Expr{}, err
		}
		if !in.fan {
			return Expr{}, &SyntaxError{Expr: expr, Pos: off, Msg: "an array collects a fan-out: want [*] or [said] inside [ ]"}
		}
		return Expr{root: rootArray, parts: []Expr{in}}, nil
	}
	p := parser{src: expr, s: s, off: off}
	return p.parse()
}

// templateCuts returns the offsets of the " + " that join a template's
// parts in s, outside quotes and brackets; none for a plain expression.
func templateCuts(s string) []int {
	var cuts []int
	depth, quoted := 0, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quoted:
			if c == '\\' {
				i++
			} else if c == '"' {
				quoted = false
			}
		case c == '"':
			quoted = true
		case c == '[' || c == '{':
			depth++
		case c == ']' || c == '}':
			depth--
		case c == '+' && depth == 0 && i > 0 && i+1 < len(s) && s[i-1] == ' ' && s[i+1] == ' ':
			cuts = append(cuts, i)
		}
	}
	return cuts
}

// parseTemplate parses the parts of a template a + b + …: references and
// string constants, at most one list fanned out over (parts that fan out
// over the same list zip).
func parseTemplate(src, s string, off int, cuts []int) (Expr, error) {
	t := Expr{root: rootConcat}
	start := 0
	for i := 0; i <= len(cuts); i++ {
		end := len(s)
		if i < len(cuts) {
			end = cuts[i]
		}
		raw := s[start:end]
		part := strings.TrimSpace(raw)
		at := off + start + strings.Index(raw, part)
		fail := func(msg string) error { return &SyntaxError{Expr: src, Pos: at, Msg: msg} }
		if part == "" {
			return Expr{}, fail("empty part of a template")
		}
		if strings.HasPrefix(part, "[$") {
			return Expr{}, fail("a template's part is a reference or a constant")
		}
		p := parser{src: src, s: part, off: at}
		e, err := p.parse()
		if err != nil {
			return Expr{}, err
		}
		switch e.root {
		case rootConst:
			if jsontext.Kind(e.val) != '"' && jsontext.Kind(e.val) != '-' && (jsontext.Kind(e.val) < '0' || jsontext.Kind(e.val) > '9') {
				return Expr{}, fail("a template's constant is a string or a number")
			}
		case rootArray, rootConcat:
			return Expr{}, fail("a template's part is a reference or a constant")
		}
		if e.fan {
			if t.fan && t.fanKey != e.fanKey {
				return Expr{}, fail("a template fans out over one list at most")
			}
			t.fan, t.fanKey = true, e.fanKey
		}
		t.parts = append(t.parts, e)
		if i < len(cuts) {
			start = cuts[i] + 1
		}
	}
	return t, nil
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

const roots = "$text, $result, $args, $call[N], $last[tool], $said[kind] or $lines"

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
	case "args":
		b.root = rootArgs
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
			b.tool = strings.ToValidUTF8(p.s[p.i:p.i+end], "\uFFFD") // as a quoted name would read
			p.i += end
		}
		if b.tool == "" {
			return Expr{}, p.fail("empty tool name")
		}
		if !p.eat(']') {
			return Expr{}, p.fail("want ] after the tool name")
		}
	case "said":
		b.root = rootSaid
		if !p.eat('[') {
			return Expr{}, p.fail("$said wants a kind: $said[email] or a shape such as $said[\"#A9999999\"]")
		}
		if p.i < len(p.s) && p.s[p.i] == '"' {
			s, err := p.quoted()
			if err != nil {
				return Expr{}, err
			}
			if s == "" {
				p.i--
				return Expr{}, p.fail("empty shape")
			}
			b.arg = s
		} else {
			start := p.i
			kind := p.ident()
			if !isKind(kind) {
				p.i = start
				return Expr{}, p.fail("unknown kind %q: want %s, or a quoted shape", kind, strings.Join(kindNames, ", "))
			}
			b.arg = kind
		}
		if !p.eat(']') {
			return Expr{}, p.fail("want ] after the kind")
		}
	case "lines":
		b.root = rootLines
		if p.i < len(p.s) && p.s[p.i] == '[' && p.i+1 < len(p.s) && p.s[p.i+1] == '"' {
			p.i++
			start := p.i
			s, err := p.quoted()
			if err != nil {
				return Expr{}, err
			}
			if strings.Count(s, "*") != 1 {
				p.i = start
				return Expr{}, p.fail("a line pattern has one * (what it captures): such as \"[FILE] *\"")
			}
			b.arg = s
			if !p.eat(']') {
				return Expr{}, p.fail("want ] after the line pattern")
			}
		}
	case "":
		return Expr{}, p.fail("want %s after $", roots)
	default:
		p.i = 1
		return Expr{}, p.fail("unknown root $%s: want %s", name, roots)
	}
	for p.i < len(p.s) {
		if b.root == rootText {
			return Expr{}, p.fail("$text is the whole text and takes no path; use $result for a path into it")
		}
		st, err := p.step(b.fan)
		if err != nil {
			return Expr{}, err
		}
		b.path = append(b.path, st)
		if st.fans() {
			b.fan = true
			b.fanKey = Expr{root: b.root, index: b.index, tool: b.tool, arg: b.arg, path: b.path}.String()
		}
	}
	return b, nil
}

// step parses one path step at p.i: .name, [N], [*], ["name"], [said],
// [said.path], [said#] or [said~]; fanned says whether the expression fans out already.
func (p *parser) step(fanned bool) (step, error) {
	switch p.s[p.i] {
	case '.':
		p.i++
		name := p.ident()
		if name == "" {
			return step{}, p.fail("want a member name after '.' (quote other names: [\"name\"])")
		}
		return step{name: name}, nil
	case '[':
		p.i++
		var st step
		switch {
		case p.eat('*'):
			if fanned {
				p.i--
				return step{}, p.fail("only one [*] fan-out per expression")
			}
			st.all = true
		case strings.HasPrefix(p.s[p.i:], "said#]"):
			p.i += 5
			st.pos = true
		case strings.HasPrefix(p.s[p.i:], "said~]"):
			if fanned {
				return step{}, p.fail("only one fan-out ([*] or [said]) per expression")
			}
			p.i += 5
			st.said, st.desc = true, true
		case strings.HasPrefix(p.s[p.i:], "said") && p.i+4 < len(p.s) && (p.s[p.i+4] == ']' || p.s[p.i+4] == '.' || p.s[p.i+4] == '['):
			if fanned {
				return step{}, p.fail("only one fan-out ([*] or [said]) per expression")
			}
			p.i += 4
			st.said = true
			for p.i < len(p.s) && p.s[p.i] != ']' {
				sub, err := p.step(true)
				if err != nil {
					return step{}, err
				}
				st.sub = append(st.sub, sub)
			}
		case p.i < len(p.s) && p.s[p.i] == '"':
			s, err := p.quoted()
			if err != nil {
				return step{}, err
			}
			st.name = s
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
				return step{}, p.fail("want an index, [*], [said] or a quoted name inside [ ]")
			}
			st.index, st.isIdx = n, true
		}
		if !p.eat(']') {
			return step{}, p.fail("want ]")
		}
		return st, nil
	}
	return step{}, p.fail("unexpected %q: want .name, [N], [*], [said] or [\"name\"]", p.s[p.i])
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
	b.write(&sb)
	return sb.String()
}

func (b Expr) write(sb *strings.Builder) {
	switch b.root {
	case rootConst:
		if b.val == nil {
			sb.WriteString("null")
			return
		}
		sb.Write(b.val)
		return
	case rootText:
		sb.WriteString("$text")
		return
	case rootResult:
		sb.WriteString("$result")
	case rootArgs:
		sb.WriteString("$args")
	case rootCall:
		sb.WriteString("$call[")
		sb.WriteString(strconv.Itoa(b.index))
		sb.WriteByte(']')
	case rootLast:
		sb.WriteString("$last[")
		if b.tool == "" || strings.ContainsAny(b.tool, "]\"") || strings.TrimSpace(b.tool) != b.tool {
			sb.Write(jsontext.AppendString(nil, b.tool, jsontext.Plain))
		} else {
			sb.WriteString(b.tool)
		}
		sb.WriteByte(']')
	case rootSaid:
		sb.WriteString("$said[")
		if isKind(b.arg) {
			sb.WriteString(b.arg)
		} else {
			sb.Write(jsontext.AppendString(nil, b.arg, jsontext.HTML))
		}
		sb.WriteByte(']')
	case rootLines:
		sb.WriteString("$lines")
		if b.arg != "" {
			sb.WriteByte('[')
			sb.Write(jsontext.AppendString(nil, b.arg, jsontext.HTML))
			sb.WriteByte(']')
		}
	case rootConcat:
		for i, p := range b.parts {
			if i > 0 {
				sb.WriteString(" + ")
			}
			p.write(sb)
		}
		return
	case rootArray:
		sb.WriteByte('[')
		b.parts[0].write(sb)
		sb.WriteByte(']')
		return
	}
	writePath(sb, b.path)
}

func writePath(sb *strings.Builder, path []step) {
	for _, st := range path {
		switch {
		case st.all:
			sb.WriteString("[*]")
		case st.desc:
			sb.WriteString("[said~]")
		case st.said:
			sb.WriteString("[said")
			writePath(sb, st.sub)
			sb.WriteByte(']')
		case st.pos:
			sb.WriteString("[said#]")
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

// FanOut reports whether the binding has a fan-out ([*], [said]): it gives
// one value per element, and its lookup is made once per value. An array
// ([expr]) collects its fan-out into one value, so it does not fan out.
func (b Expr) FanOut() bool { return b.fan }

// Said reports whether the binding reads the conversation: $said, a
// [said] filter or a [said#] position.
func (b Expr) Said() bool {
	switch b.root {
	case rootSaid:
		return true
	case rootConcat, rootArray:
		for _, p := range b.parts {
			if p.Said() {
				return true
			}
		}
		return false
	}
	for _, st := range b.path {
		if st.said || st.pos {
			return true
		}
	}
	return false
}

// Tool returns the tool a $last[tool] binding reads, else "".
func (b Expr) Tool() string { return b.tool }

// Equal reports whether two bindings are the same expression.
func (b Expr) Equal(o Expr) bool { return b.String() == o.String() }
