package flow

import (
	"encoding/json"
	"slices"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// parseJSON parses one JSON value (with surrounding space) into the shapes
// encoding/json gives with UseNumber: map[string]any, []any, string,
// json.Number, bool and nil. It is a small recursive-descent parser, several
// times faster than encoding/json's reflection on the result documents a
// decision reads; strings without escapes share text's memory. ok is false
// for anything that is not exactly one valid JSON value.
func parseJSON(text string) (v any, ok bool) {
	p := jsonParser{s: text}
	p.space()
	v, ok = p.value(0)
	if !ok {
		return nil, false
	}
	p.space()
	return v, p.i == len(p.s)
}

type jsonParser struct {
	s string
	i int
}

const maxJSONDepth = 10000

func (p *jsonParser) space() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *jsonParser) value(depth int) (any, bool) {
	if p.i >= len(p.s) || depth > maxJSONDepth {
		return nil, false
	}
	switch c := p.s[p.i]; {
	case c == '{':
		p.i++
		m := map[string]any{}
		p.space()
		if p.i < len(p.s) && p.s[p.i] == '}' {
			p.i++
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
			v, ok := p.value(depth + 1)
			if !ok {
				return nil, false
			}
			m[k] = v
			p.space()
			if p.i >= len(p.s) {
				return nil, false
			}
			if p.s[p.i] == ',' {
				p.i++
				continue
			}
			if p.s[p.i] == '}' {
				p.i++
				return m, true
			}
			return nil, false
		}
	case c == '[':
		p.i++
		a := []any{}
		p.space()
		if p.i < len(p.s) && p.s[p.i] == ']' {
			p.i++
			return a, true
		}
		for {
			p.space()
			v, ok := p.value(depth + 1)
			if !ok {
				return nil, false
			}
			a = append(a, v)
			p.space()
			if p.i >= len(p.s) {
				return nil, false
			}
			if p.s[p.i] == ',' {
				p.i++
				continue
			}
			if p.s[p.i] == ']' {
				p.i++
				return a, true
			}
			return nil, false
		}
	case c == '"':
		return p.str()
	case c == 't':
		return true, p.lit("true")
	case c == 'f':
		return false, p.lit("false")
	case c == 'n':
		return nil, p.lit("null")
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	}
	return nil, false
}

func (p *jsonParser) lit(w string) bool {
	if strings.HasPrefix(p.s[p.i:], w) {
		p.i += len(w)
		return true
	}
	return false
}

func (p *jsonParser) number() (any, bool) {
	t, ok := p.numberText()
	if !ok {
		return nil, false
	}
	return json.Number(t), true
}

func (p *jsonParser) numberText() (string, bool) {
	start := p.i
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
		return "", false
	}
	if p.i < len(p.s) && p.s[p.i] == '.' {
		p.i++
		if digits() == 0 {
			return "", false
		}
	}
	if p.i < len(p.s) && (p.s[p.i] == 'e' || p.s[p.i] == 'E') {
		p.i++
		if p.i < len(p.s) && (p.s[p.i] == '+' || p.s[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return "", false
		}
	}
	return p.s[start:p.i], true
}

// str reads a string at p.i (which is '"').
func (p *jsonParser) str() (string, bool) {
	p.i++
	start := p.i
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			s := p.s[start:p.i]
			p.i++
			if !utf8.ValidString(s) {
				return fixUTF8(s), true
			}
			return s, true
		case c == '\\':
			return p.escaped(start)
		case c < 0x20:
			return "", false
		}
		p.i++
	}
	return "", false
}

// escaped finishes a string with escapes, from its start.
func (p *jsonParser) escaped(start int) (string, bool) {
	var b strings.Builder
	b.WriteString(p.s[start:p.i])
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			return fixUTF8(b.String()), true
		case c < 0x20:
			return "", false
		case c != '\\':
			b.WriteByte(c)
			p.i++
			continue
		}
		p.i++
		if p.i >= len(p.s) {
			return "", false
		}
		e := p.s[p.i]
		p.i++
		switch e {
		case '"', '\\', '/':
			b.WriteByte(e)
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			r, ok := p.hex4()
			if !ok {
				return "", false
			}
			if utf16.IsSurrogate(r) {
				if strings.HasPrefix(p.s[p.i:], `\u`) {
					save := p.i
					p.i += 2
					if r2, ok := p.hex4(); ok {
						if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
							b.WriteRune(d)
							continue
						}
					}
					p.i = save
				}
				r = utf8.RuneError
			}
			b.WriteRune(r)
		default:
			return "", false
		}
	}
	return "", false
}

func (p *jsonParser) hex4() (rune, bool) {
	if p.i+4 > len(p.s) {
		return 0, false
	}
	var r rune
	for _, c := range []byte(p.s[p.i : p.i+4]) {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	p.i += 4
	return r, true
}

// fixUTF8 replaces each byte of an invalid UTF-8 sequence by U+FFFD, as
// encoding/json does.
func fixUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b.WriteString("\uFFFD")
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// skip moves past one JSON value without building it, and reports whether it
// was valid.
func (p *jsonParser) skip(depth int) bool {
	if p.i >= len(p.s) || depth > maxJSONDepth {
		return false
	}
	switch c := p.s[p.i]; {
	case c == '{' || c == '[':
		closer := byte('}')
		if c == '[' {
			closer = ']'
		}
		p.i++
		p.space()
		if p.i < len(p.s) && p.s[p.i] == closer {
			p.i++
			return true
		}
		for {
			p.space()
			if c == '{' {
				if p.i >= len(p.s) || p.s[p.i] != '"' || !p.skipString() {
					return false
				}
				p.space()
				if p.i >= len(p.s) || p.s[p.i] != ':' {
					return false
				}
				p.i++
				p.space()
			}
			if !p.skip(depth + 1) {
				return false
			}
			p.space()
			if p.i >= len(p.s) {
				return false
			}
			if p.s[p.i] == ',' {
				p.i++
				continue
			}
			if p.s[p.i] == closer {
				p.i++
				return true
			}
			return false
		}
	case c == '"':
		return p.skipString()
	case c == 't':
		return p.lit("true")
	case c == 'f':
		return p.lit("false")
	case c == 'n':
		return p.lit("null")
	case c == '-' || c >= '0' && c <= '9':
		return p.skipNumber()
	}
	return false
}

// skipNumber moves past a number, as number does, without allocating.
func (p *jsonParser) skipNumber() bool {
	start := p.i
	_, ok := p.numberText()
	return ok && p.i > start
}

// skipString moves past a string at p.i (which is '"'), checking its escapes.
func (p *jsonParser) skipString() bool {
	p.i++
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			return true
		case c < 0x20:
			return false
		case c == '\\':
			p.i++
			if p.i >= len(p.s) {
				return false
			}
			switch p.s[p.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				p.i++
			case 'u':
				p.i++
				if _, ok := p.hex4(); !ok {
					return false
				}
			default:
				return false
			}
			continue
		}
		p.i++
	}
	return false
}

// validJSON reports whether text is exactly one JSON value (with space
// around it), without building it.
func validJSON(text string) bool {
	p := jsonParser{s: text}
	p.space()
	if !p.skip(0) {
		return false
	}
	p.space()
	return p.i == len(p.s)
}

// walkRaw evaluates path over valid JSON text without parsing more than
// the values it returns: members and elements it passes are skipped. It
// appends the values to out; failed is the index of the step that named
// nothing, or -1.
func walkRaw(text string, path []step, out []any) (_ []any, failed int, why string) {
	p := jsonParser{s: text}
	p.space()
	for i, st := range path {
		if p.i >= len(p.s) {
			return out, i, "no value"
		}
		switch {
		case st.all || st.isIdx:
			if p.s[p.i] != '[' {
				return out, i, "not a list"
			}
			if st.isIdx && st.index < 0 {
				n := countElements(p)
				k := st.index + n
				if k < 0 {
					return out, i, "index out of range"
				}
				st.index = k
			}
			p.i++
			p.space()
			k := 0
			for p.i < len(p.s) && p.s[p.i] != ']' {
				start := p.i
				p.skip(1)
				if st.all {
					out, _, _ = walkRaw(p.s[start:p.i], path[i+1:], out) // elements without it are skipped
				} else if k == st.index {
					p.i = start
					break
				}
				k++
				p.space()
				if p.i < len(p.s) && p.s[p.i] == ',' {
					p.i++
					p.space()
				}
			}
			if st.all {
				return out, -1, ""
			}
			if p.i >= len(p.s) || p.s[p.i] == ']' {
				return out, i, "index out of range"
			}
		default:
			if p.s[p.i] != '{' {
				return out, i, "not an object"
			}
			p.i++
			found := -1
			for {
				p.space()
				if p.i >= len(p.s) || p.s[p.i] != '"' {
					break
				}
				k, _ := p.str()
				p.space()
				p.i++ // ':'
				p.space()
				if k == st.name {
					found = p.i
					break // the first of equal members (RFC 8259 leaves them undefined)
				}
				p.skip(1)
				p.space()
				if p.i < len(p.s) && p.s[p.i] == ',' {
					p.i++
				}
			}
			if found < 0 {
				return out, i, "no such member"
			}
			p.i = found
		}
	}
	v, ok := p.value(0)
	if !ok {
		return out, len(path), "no value"
	}
	return append(out, v), -1, ""
}

// countElements counts the elements of the list at p.i, leaving p as it was.
func countElements(p jsonParser) int {
	p.i++
	p.space()
	n := 0
	for p.i < len(p.s) && p.s[p.i] != ']' {
		if !p.skip(1) {
			return n
		}
		n++
		p.space()
		if p.i < len(p.s) && p.s[p.i] == ',' {
			p.i++
			p.space()
		}
	}
	return n
}

// appendJSON appends v's JSON, exactly as encoding/json.Marshal writes it
// (object members sorted, HTML characters escaped), without its reflection
// for the shapes a document holds.
func appendJSON(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...)
	case string:
		return appendJSONString(b, x)
	case json.Number:
		if x == "" {
			return append(b, '0')
		}
		return append(b, x...)
	case bool:
		if x {
			return append(b, "true"...)
		}
		return append(b, "false"...)
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSON(b, e)
		}
		return append(b, ']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, k)
			b = append(b, ':')
			b = appendJSON(b, x[k])
		}
		return append(b, '}')
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return append(b, "null"...)
	}
	return append(b, raw...)
}

const hexDigits = "0123456789abcdef"

// appendJSONString quotes s as encoding/json does: <, >, & and U+2028/9
// escaped, control characters as \n, \r, \t or \u00XX, invalid UTF-8 as
// \ufffd.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
