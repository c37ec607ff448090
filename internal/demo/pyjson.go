package demo

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// pyJSON writes JSON text as Python's json.dumps does by default, which is
// how τ²-bench's tools answer: ", " and ": " between tokens, every
// character outside printable ASCII escaped (ensure_ascii, lowercase hex,
// surrogate pairs beyond the BMP), and floats as Python's repr writes them.
// An agent reads those bytes, so a replay that is to reproduce a recorded
// answer must write the same ones, not merely the same values.
type pyJSON struct {
	b      []byte
	counts []int // per open object or array: the members written so far
	keyed  bool  // a member's name was written: its value takes no separator
}

// sep writes the separator before a value or a member's name.
func (w *pyJSON) sep() {
	if w.keyed {
		w.keyed = false
		return
	}
	if n := len(w.counts); n > 0 {
		if w.counts[n-1] > 0 {
			w.b = append(w.b, ", "...)
		}
		w.counts[n-1]++
	}
}

func (w *pyJSON) open(c byte) {
	w.sep()
	w.b = append(w.b, c)
	w.counts = append(w.counts, 0)
}

func (w *pyJSON) close(c byte) {
	w.counts = w.counts[:len(w.counts)-1]
	w.b = append(w.b, c)
}

func (w *pyJSON) beginObject() { w.open('{') }
func (w *pyJSON) endObject()   { w.close('}') }
func (w *pyJSON) beginArray()  { w.open('[') }
func (w *pyJSON) endArray()    { w.close(']') }

// key writes a member's name; its value follows.
func (w *pyJSON) key(k string) {
	w.sep()
	w.b = appendPyString(w.b, k)
	w.b = append(w.b, ": "...)
	w.keyed = true
}

func (w *pyJSON) str(s string) {
	w.sep()
	w.b = appendPyString(w.b, s)
}

func (w *pyJSON) float(f float64) {
	w.sep()
	w.b = appendPyFloat(w.b, f)
}

func (w *pyJSON) boolean(v bool) {
	w.sep()
	w.b = strconv.AppendBool(w.b, v)
}

func (w *pyJSON) null() {
	w.sep()
	w.b = append(w.b, "null"...)
}

// strField writes a member whose value is a string.
func (w *pyJSON) strField(k, v string) {
	w.key(k)
	w.str(v)
}

// floatField writes a member whose value is a float.
func (w *pyJSON) floatField(k string, v float64) {
	w.key(k)
	w.float(v)
}

// strs writes a list of strings, or null for nil.
func (w *pyJSON) strs(list []string) {
	if list == nil {
		w.null()
		return
	}
	w.beginArray()
	for _, s := range list {
		w.str(s)
	}
	w.endArray()
}

// optStr writes s, or null for nil.
func (w *pyJSON) optStr(s *string) {
	if s == nil {
		w.null()
		return
	}
	w.str(*s)
}

// optFloat writes f, or null for nil.
func (w *pyJSON) optFloat(f *float64) {
	if f == nil {
		w.null()
		return
	}
	w.float(*f)
}

func (w *pyJSON) String() string { return string(w.b) }

const pyHex = "0123456789abcdef"

// appendPyString appends s as json.dumps writes a str with ensure_ascii:
// the two-character escapes for quote, backslash, \n, \r, \t, \b and \f,
// and \uXXXX for everything else outside the space-to-tilde range.
func appendPyString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= ' ' && c <= '~' {
			if c == '"' || c == '\\' {
				dst = append(dst, '\\')
			}
			dst = append(dst, c)
			i++
			continue
		}
		switch c {
		case '\n':
			dst = append(dst, `\n`...)
			i++
			continue
		case '\r':
			dst = append(dst, `\r`...)
			i++
			continue
		case '\t':
			dst = append(dst, `\t`...)
			i++
			continue
		case '\b':
			dst = append(dst, `\b`...)
			i++
			continue
		case '\f':
			dst = append(dst, `\f`...)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if r > 0xFFFF {
			r -= 0x10000
			dst = appendU(dst, 0xD800+(r>>10))
			r = 0xDC00 + r&0x3FF
		}
		dst = appendU(dst, r)
	}
	return append(dst, '"')
}

func appendU(dst []byte, r rune) []byte {
	return append(dst, '\\', 'u', pyHex[r>>12&0xF], pyHex[r>>8&0xF], pyHex[r>>4&0xF], pyHex[r&0xF])
}

// appendPyFloat appends f as Python's repr writes a float, which is what
// json.dumps writes: the shortest digits that read back as f, in fixed
// notation with at least one decimal (12.0) when its decimal exponent is
// from -4 to 15, else in exponent notation (1e-05, 1.5e+16); json.dumps
// writes the non-finite ones as NaN, Infinity and -Infinity.
func appendPyFloat(dst []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, "NaN"...)
	case math.IsInf(f, 1):
		return append(dst, "Infinity"...)
	case math.IsInf(f, -1):
		return append(dst, "-Infinity"...)
	}
	e := strconv.FormatFloat(f, 'e', -1, 64)
	exp, _ := strconv.Atoi(e[strings.IndexByte(e, 'e')+1:])
	if exp < -4 || exp >= 16 {
		return append(dst, e...)
	}
	start := len(dst)
	dst = strconv.AppendFloat(dst, f, 'f', -1, 64)
	if !strings.Contains(string(dst[start:]), ".") {
		dst = append(dst, ".0"...)
	}
	return dst
}

// pyRound2 is Python's round(f, 2): the nearest multiple of 0.01 to f's
// exact value, ties to even, read back as a float.
func pyRound2(f float64) float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return f
	}
	r, _ := strconv.ParseFloat(strconv.FormatFloat(f, 'f', 2, 64), 64)
	return r
}
