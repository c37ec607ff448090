package jsontext

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// Parse parses the JSON text b into a tree: map[string]any, []any, string,
// json.Number, bool and nil, the shapes encoding/json gives with UseNumber.
// ok is false exactly when Valid(b) is false. A repeated name keeps its
// last value. The tree shares nothing with b.
func Parse(b []byte) (v any, ok bool) { return ParseString(string(b)) }

// ParseString is Parse for a string. Strings in the tree that had no
// escapes share s's memory, which makes it several times faster than
// encoding/json on the tool results a decision reads.
func ParseString(s string) (v any, ok bool) {
	p := parser{scanner: scanner{b: bytesOf(s)}, s: s}
	p.space()
	if p.i >= len(s) || !startsValue(s[p.i]) || !utf8.ValidString(s) {
		return nil, false // most texts that are not JSON fail at their first byte
	}
	v, ok = p.value(0)
	if !ok {
		return nil, false
	}
	p.space()
	if p.i != len(p.s) {
		return nil, false
	}
	return v, true
}

// ParseValid is ParseString for a text already known to be valid JSON,
// such as a value found inside a validated document: it skips the checks,
// and a string or number costs no copy at all.
func ParseValid(s string) any {
	i := skipSpace(s, 0)
	if i < len(s) {
		switch c := s[i]; {
		case c == '"':
			if end := strings.IndexByte(s[i+1:], '"'); end >= 0 && strings.IndexByte(s[i+1:i+1+end], '\\') < 0 {
				return s[i+1 : i+1+end]
			}
		case c == '-' || c >= '0' && c <= '9':
			return json.Number(strings.TrimRight(s[i:], " \t\r\n"))
		case c == 't':
			return true
		case c == 'f':
			return false
		case c == 'n':
			return nil
		}
	}
	p := parser{scanner: scanner{b: bytesOf(s)}, s: s}
	p.space()
	v, _ := p.value(0)
	return v
}

// parser is a small recursive-descent parser that checks as it goes. Its
// scanner reads the bytes of s, which strings of the tree are cut from.
type parser struct {
	scanner
	s string
}

// value parses the value at p.i, inside depth containers.
func (p *parser) value(depth int) (any, bool) {
	if p.i >= len(p.s) {
		return nil, false
	}
	switch c := p.s[p.i]; {
	case c == '{':
		if depth+1 > MaxDepth {
			return nil, false
		}
		return p.object(depth + 1)
	case c == '[':
		if depth+1 > MaxDepth {
			return nil, false
		}
		return p.array(depth + 1)
	case c == '"':
		return p.str()
	case c == 't':
		return true, p.lit("true")
	case c == 'f':
		return false, p.lit("false")
	case c == 'n':
		return nil, p.lit("null")
	case c == '-' || c >= '0' && c <= '9':
		start := p.i
		if !p.number() {
			return nil, false
		}
		return json.Number(p.s[start:p.i]), true
	}
	return nil, false
}

// open steps over the bracket at p.i and the space after it, and reports
// whether close follows at once (an empty container), stepping over it too.
func (p *parser) open(close byte) bool {
	p.i++
	p.space()
	if p.i < len(p.s) && p.s[p.i] == close {
		p.i++
		return true
	}
	return false
}

func (p *parser) object(depth int) (any, bool) {
	m := map[string]any{}
	if p.open('}') {
		return m, true
	}
	for {
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != '"' {
			return nil, false
		}
		k, ok := p.str()
		if !ok {
			return nil, false
		}
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != ':' {
			return nil, false
		}
		p.i++
		p.space()
		v, ok := p.value(depth)
		if !ok {
			return nil, false
		}
		m[k.(string)] = v // the last of repeated names wins
		switch p.after('}') {
		case sepMore:
		case sepClose:
			return m, true
		default:
			return nil, false
		}
	}
}

func (p *parser) array(depth int) (any, bool) {
	a := []any{}
	if p.open(']') {
		return a, true
	}
	for {
		p.space()
		v, ok := p.value(depth)
		if !ok {
			return nil, false
		}
		a = append(a, v)
		switch p.after(']') {
		case sepMore:
		case sepClose:
			return a, true
		default:
			return nil, false
		}
	}
}

func (p *parser) lit(w string) bool {
	if strings.HasPrefix(p.s[p.i:], w) {
		p.i += len(w)
		return true
	}
	return false
}

func (p *parser) number() bool {
	if p.s[p.i] == '-' {
		p.i++
	}
	digits := func() int {
		n := 0
		for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	if p.i < len(p.s) && p.s[p.i] == '0' {
		p.i++
	} else if digits() == 0 {
		return false
	}
	if p.i < len(p.s) && p.s[p.i] == '.' {
		p.i++
		if digits() == 0 {
			return false
		}
	}
	if p.i < len(p.s) && (p.s[p.i] == 'e' || p.s[p.i] == 'E') {
		p.i++
		if p.i < len(p.s) && (p.s[p.i] == '+' || p.s[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return false
		}
	}
	return true
}

// str parses the string at p.i (which is '"'). A string without escapes
// is a substring of p.s.
func (p *parser) str() (any, bool) {
	start := p.i
	p.i++
	for p.i < len(p.s) {
		switch c := p.s[p.i]; {
		case c == '"':
			p.i++
			return p.s[start+1 : p.i-1], true
		case c == '\\':
			return p.escaped(start)
		case c < 0x20:
			return nil, false
		}
		p.i++
	}
	return nil, false
}

// escaped finishes, from p.i (a backslash), the string that starts at
// start: it checks the escapes, then decodes the token once.
func (p *parser) escaped(start int) (any, bool) {
	for p.i < len(p.s) {
		switch c := p.s[p.i]; {
		case c == '"':
			p.i++
			return string(AppendUnquote(make([]byte, 0, p.i-start), bytesOf(p.s[start:p.i]))), true
		case c < 0x20:
			return nil, false
		case c == '\\':
			if p.i+1 >= len(p.s) {
				return nil, false
			}
			switch p.s[p.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				p.i += 2
			case 'u':
				if p.i+6 > len(p.s) {
					return nil, false
				}
				for k := p.i + 2; k < p.i+6; k++ {
					if !isHex(p.s[k]) {
						return nil, false
					}
				}
				p.i += 6
			default:
				return nil, false
			}
		default:
			p.i++
		}
	}
	return nil, false
}

// startsValue reports whether c can start a JSON value.
func startsValue(c byte) bool {
	switch c {
	case '{', '[', '"', '-', 't', 'f', 'n':
		return true
	}
	return c >= '0' && c <= '9'
}
