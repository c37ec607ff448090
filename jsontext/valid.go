package jsontext

import (
	"encoding/binary"
	"math/bits"
	"unicode/utf8"
)

// MaxDepth is the deepest nesting of arrays and objects a JSON text may
// have, as encoding/json allows.
const MaxDepth = 10000

// Valid reports whether b is exactly one JSON value in valid UTF-8, with
// optional whitespace around it, nested at most MaxDepth deep. It accepts
// exactly what utf8.Valid and json.Valid together accept (within the
// depth), several times faster: tool results are mostly long strings, which
// it skips eight bytes at a time.
func Valid(b []byte) bool { return ValidDepth(b, MaxDepth) }

// ValidDepth is Valid with another depth limit. A session log's line wraps
// a wire message one level deeper than the message, so the log reader
// accepts MaxDepth+1: every line the writer writes reads back.
func ValidDepth(b []byte, maxDepth int) bool {
	if !utf8.Valid(b) {
		return false
	}
	v := validator{scanner: scanner{b: b}, max: maxDepth}
	v.space()
	if !v.value(0) {
		return false
	}
	v.space()
	return v.i == len(v.b)
}

// ValidString is Valid for a string, without copying it.
func ValidString(s string) bool { return Valid(bytesOf(s)) }

// Span is where a member of an object is in a text, by offsets: its name
// token (quotes included) and its value.
type Span struct {
	NameStart, NameEnd, ValueStart, ValueEnd int
}

// ValidMembers is Valid, and when b's value is an object it also returns
// where its members are, in order, found in the same pass: what a reader
// of many members of one document (bindings over a tool result) would
// otherwise scan the object again for.
func ValidMembers(b []byte) (members []Span, ok bool) {
	return AppendValidMembers(nil, b, MaxDepth)
}

// AppendValidMembers is ValidMembers with a depth limit (as ValidDepth),
// appending the members to dst: a reader of many lines (the session log's)
// keeps one slice for them all, and reads each line's members from the
// pass that validates it instead of scanning the line again. When b is not
// valid it returns dst as it was, and false.
func AppendValidMembers(dst []Span, b []byte, maxDepth int) ([]Span, bool) {
	if !utf8.Valid(b) {
		return dst, false
	}
	members := dst
	v := validator{scanner: scanner{b: b}, max: maxDepth, top: &members}
	v.space()
	if !v.value(0) {
		return dst, false
	}
	v.space()
	if v.i != len(v.b) {
		return dst, false
	}
	return members, true
}

// Name returns the member's name in b, the text its Span was read from,
// unquoted; it aliases b when the name has no escapes.
func (s Span) Name(b []byte) []byte { return unquoteBytes(b[s.NameStart:s.NameEnd]) }

// Value returns the member's value in b, exactly as it is there.
func (s Span) Value(b []byte) []byte { return b[s.ValueStart:s.ValueEnd] }

// ValueLen returns the length of the JSON value at the very start of b (no
// leading whitespace), and whether there is a valid one there; what
// follows it is not looked at. It reads a quoted name or a constant
// inside a larger expression, such as a binding.
func ValueLen(b []byte) (int, bool) {
	v := validator{scanner: scanner{b: b}, max: MaxDepth}
	if !v.value(0) {
		return 0, false
	}
	if !utf8.Valid(b[:v.i]) {
		return 0, false
	}
	return v.i, true
}

// validator checks JSON as it scans it; its scanner's i is where it is.
type validator struct {
	scanner
	max int
	// top, when set, receives the members of the outermost object.
	top     *[]Span
	nameEnd int // where the last name read ends
}

// skipSpace returns the index of the first byte of b at or after i that
// is not JSON whitespace: the one whitespace rule of every scanner here.
func skipSpace[T ~string | ~[]byte](b T, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}

func (v *validator) value(depth int) bool {
	if v.i >= len(v.b) {
		return false
	}
	switch c := v.b[v.i]; {
	case c == '"':
		return v.str()
	case c == '{' || c == '[':
		return v.container(depth + 1)
	case c == '-' || (c >= '0' && c <= '9'):
		return v.number()
	case c == 't':
		return v.literal("true")
	case c == 'f':
		return v.literal("false")
	case c == 'n':
		return v.literal("null")
	}
	return false
}

func (v *validator) literal(lit string) bool {
	if len(v.b)-v.i < len(lit) || string(v.b[v.i:v.i+len(lit)]) != lit {
		return false
	}
	v.i += len(lit)
	return true
}

// container validates the object or array at v.i (its opening byte),
// nested depth deep: members (name, colon, value) for an object, values
// for an array, separated by commas.
func (v *validator) container(depth int) bool {
	if depth > v.max {
		return false
	}
	closer := byte(']')
	if v.b[v.i] == '{' {
		closer = '}'
	}
	v.i++
	v.space()
	if v.i < len(v.b) && v.b[v.i] == closer {
		v.i++
		return true
	}
	record := depth == 1 && closer == '}' && v.top != nil
	for {
		var m Span
		m.NameStart = v.i
		if closer == '}' && !v.name() {
			return false
		}
		if record {
			m.NameEnd = v.nameEnd
			m.ValueStart = v.i
		}
		if !v.value(depth) {
			return false
		}
		if record {
			m.ValueEnd = v.i
			*v.top = append(*v.top, m)
		}
		switch v.after(closer) {
		case sepMore:
			v.space()
		case sepClose:
			return true
		default:
			return false
		}
	}
}

// name validates a member's name and its colon, and the space after it.
func (v *validator) name() bool {
	if v.i >= len(v.b) || v.b[v.i] != '"' || !v.str() {
		return false
	}
	v.nameEnd = v.i
	v.space()
	if v.i >= len(v.b) || v.b[v.i] != ':' {
		return false
	}
	v.i++
	v.space()
	return true
}

const (
	lsb    = 0x0101010101010101
	msb    = 0x8080808080808080
	quote  = '"' * lsb
	bslash = '\\' * lsb
)

// special returns a mask with the high bit set in each of 8 bytes that a
// string scan must stop at: a control character, a quote or a backslash.
// Bytes ≥ 0x80 are plain, since the line's UTF-8 was validated first. The
// lowest set byte is exact (the borrow of the subtraction trick can only
// flag bytes above a true hit).
func special(x uint64) uint64 {
	ctl := (x - 0x20*lsb) &^ x
	q := x ^ quote
	q = (q - lsb) &^ q
	s := x ^ bslash
	s = (s - lsb) &^ s
	return (ctl | q | s) & msb
}

func (v *validator) str() bool {
	v.i++ // opening quote
	b := v.b
	for {
		// Skip to the next byte that matters, eight bytes at a time.
		for {
			if v.i+8 > len(b) {
				for v.i < len(b) && b[v.i] >= 0x20 && b[v.i] != '"' && b[v.i] != '\\' {
					v.i++
				}
				break
			}
			if m := special(binary.LittleEndian.Uint64(b[v.i:])); m != 0 {
				v.i += bits.TrailingZeros64(m) >> 3
				break
			}
			v.i += 8
		}
		if v.i >= len(b) {
			return false
		}
		switch c := b[v.i]; {
		case c == '"':
			v.i++
			return true
		case c == '\\':
			if v.i+1 >= len(b) {
				return false
			}
			switch b[v.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				v.i += 2
			case 'u':
				if v.i+6 > len(b) {
					return false
				}
				for _, h := range b[v.i+2 : v.i+6] {
					if !isHex(h) {
						return false
					}
				}
				v.i += 6
			default:
				return false
			}
		default: // a control character
			return false
		}
	}
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func (v *validator) number() bool {
	b := v.b
	if b[v.i] == '-' {
		v.i++
	}
	if v.i >= len(b) {
		return false
	}
	switch {
	case b[v.i] == '0':
		v.i++
	case b[v.i] >= '1' && b[v.i] <= '9':
		for v.i < len(b) && b[v.i] >= '0' && b[v.i] <= '9' {
			v.i++
		}
	default:
		return false
	}
	if v.i < len(b) && b[v.i] == '.' {
		v.i++
		if !v.digits() {
			return false
		}
	}
	if v.i < len(b) && (b[v.i] == 'e' || b[v.i] == 'E') {
		v.i++
		if v.i < len(b) && (b[v.i] == '+' || b[v.i] == '-') {
			v.i++
		}
		if !v.digits() {
			return false
		}
	}
	return true
}

func (v *validator) digits() bool {
	start := v.i
	for v.i < len(v.b) && v.b[v.i] >= '0' && v.b[v.i] <= '9' {
		v.i++
	}
	return v.i > start
}
