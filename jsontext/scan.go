package jsontext

import (
	"encoding/binary"
	"iter"
	"math/bits"
	"unsafe"
)

// Members yields each member of the JSON object at the start of obj (after
// optional whitespace), in order: its decoded name and its value's exact
// bytes. obj must be valid JSON (see Valid); a value that is not an object
// yields nothing. The value aliases obj, and so does the name unless it had
// escapes; copy them (string(name)) to keep them past obj. A name repeated
// is yielded each time (the package's rule: the last one wins).
//
// It reads nothing but the members' boundaries, so a large value costs one
// pass over its bytes and no allocation.
func Members(obj []byte) iter.Seq2[[]byte, []byte] {
	return func(yield func(name, val []byte) bool) {
		for tok, val := range RawMembers(obj) {
			if !yield(unquoteBytes(tok), val) {
				return
			}
		}
	}
}

// RawMembers is Members with each name as its token exactly as sent,
// quotes and escapes included, for code that copies what it does not
// change (a rewriter): decode it with Unquote to compare it.
func RawMembers(obj []byte) iter.Seq2[[]byte, []byte] {
	return func(yield func(tok, val []byte) bool) {
		s := scanner{b: obj}
		if !s.enter('{') {
			return
		}
		for s.more('}') {
			keyStart := s.i
			s.skipString()
			tok := s.b[keyStart:s.i]
			s.space()
			s.i++ // ':'
			s.space()
			valStart := s.i
			s.skipValue()
			if !yield(tok, s.b[valStart:s.i]) {
				return
			}
		}
	}
}

// Elements yields each element of the JSON array at the start of arr (after
// optional whitespace), in order, as its exact bytes, which alias arr. arr
// must be valid JSON; a value that is not an array yields nothing.
func Elements(arr []byte) iter.Seq[[]byte] {
	return func(yield func(val []byte) bool) {
		s := scanner{b: arr}
		if !s.enter('[') {
			return
		}
		for s.more(']') {
			start := s.i
			s.skipValue()
			if !yield(s.b[start:s.i]) {
				return
			}
		}
	}
}

// Lookup returns the value of obj's member called name (compared exactly),
// the last one when the name is repeated, and whether there is one. obj
// must be valid JSON.
func Lookup(obj []byte, name string) ([]byte, bool) {
	var found []byte
	ok := false
	for k, v := range Members(obj) {
		if string(k) == name {
			found, ok = v, true
		}
	}
	return found, ok
}

// Len returns the number of elements of the JSON array at the start of arr
// (valid JSON), or of members of an object; 0 for anything else.
func Len(b []byte) int {
	n := 0
	switch Kind(b) {
	case '[':
		for range Elements(b) {
			n++
		}
	case '{':
		for range Members(b) {
			n++
		}
	}
	return n
}

// Kind returns the first byte of the JSON value at the start of b, after
// whitespace: '{', '[', '"', 't', 'f', 'n', or a digit or '-' for a number;
// 0 when there is none.
func Kind(b []byte) byte {
	if i := skipSpace(b, 0); i < len(b) {
		return b[i]
	}
	return 0
}

// Offset returns where sub, a subslice handed out by Members or Elements
// (or any subslice of b), starts in b.
func Offset(b, sub []byte) int {
	if len(sub) == 0 && cap(sub) == 0 {
		return len(b)
	}
	return int(uintptr(unsafe.Pointer(unsafe.SliceData(sub))) - uintptr(unsafe.Pointer(unsafe.SliceData(b))))
}

// StringBytes views s as bytes without copying it, so that a string (a tool
// result's text) can be scanned in place; the bytes must never be written.
// Offset of a value found in them is an offset into s.
func StringBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

func bytesOf(s string) []byte { return StringBytes(s) }

// scanner walks JSON that is already known to be valid, so it checks
// nothing and never fails.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) space() { s.i = skipSpace(s.b, s.i) }

// sep is what follows a member or an element of a container.
type sep uint8

const (
	sepMore  sep = iota // a comma: another member or element
	sepClose            // the container's closer
	sepCut              // the end of the bytes
	sepBad              // anything else: not JSON
)

// after reads past what follows a member or an element (space, then a
// comma or closer) and says what it was.
func (s *scanner) after(closer byte) sep {
	s.space()
	if s.i >= len(s.b) {
		return sepCut
	}
	switch s.b[s.i] {
	case ',':
		s.i++
		return sepMore
	case closer:
		s.i++
		return sepClose
	}
	return sepBad
}

// enter moves past the opening byte of the container at the start of s.b
// (after space), and reports whether one is there.
func (s *scanner) enter(open byte) bool {
	s.space()
	if s.i >= len(s.b) || s.b[s.i] != open {
		return false
	}
	s.i++
	return true
}

// more moves to the container's next member or element, past the comma
// before it, and reports whether there is one (false at closer).
func (s *scanner) more(closer byte) bool {
	s.space()
	if s.b[s.i] == closer {
		return false
	}
	if s.b[s.i] == ',' {
		s.i++
		s.space()
	}
	return true
}

// skipString moves past the string at s.i, eight bytes at a time between
// the bytes that matter, and reports whether it ended (a prefix may cut it
// short; valid JSON never does).
func (s *scanner) skipString() bool {
	s.i++ // opening quote
	b := s.b
	for s.i < len(b) {
		if s.i+8 <= len(b) {
			m := quoteOrSlash(binary.LittleEndian.Uint64(b[s.i:]))
			if m == 0 {
				s.i += 8
				continue
			}
			s.i += bits.TrailingZeros64(m) >> 3
		}
		switch b[s.i] {
		case '\\':
			s.i += 2
		case '"':
			s.i++
			return true
		default:
			s.i++
		}
	}
	return false
}

// quoteOrSlash flags, in the high bit of each byte, a quote or a backslash.
// The lowest flagged byte is exact.
func quoteOrSlash(x uint64) uint64 {
	q := x ^ quote
	q = (q - lsb) &^ q
	sl := x ^ bslash
	sl = (sl - lsb) &^ sl
	return (q | sl) & msb
}

// skipValue moves past the value at s.i by its boundaries, and reports
// whether it ended within s.b: a string or container closed, a scalar
// followed by a delimiter. Valid JSON always ends; a prefix may not.
func (s *scanner) skipValue() bool {
	if s.i >= len(s.b) {
		return false
	}
	switch s.b[s.i] {
	case '"':
		return s.skipString()
	case '{', '[':
		depth := 0
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case '"':
				if !s.skipString() {
					return false
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					s.i++
					return true
				}
			}
			s.i++
		}
		return false
	default: // number, true, false, null
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case ',', '}', ']', ' ', '\t', '\r', '\n':
				return true
			}
			s.i++
		}
		return false
	}
}
