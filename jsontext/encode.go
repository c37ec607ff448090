package jsontext

import (
	"encoding/json"
	"slices"
	"unicode/utf8"
)

// Escaping says which characters a string encoder escapes beyond those JSON
// requires.
type Escaping uint8

// The escapings.
const (
	// Plain escapes only what JSON requires (quote, backslash, control
	// characters) and U+2028/U+2029, so text stays readable: session logs.
	Plain Escaping = iota
	// HTML also escapes <, > and & as \u003c, \u003e and \u0026, which is
	// what encoding/json.Marshal writes: flows and their labels, so that a
	// value encoded here and one encoded by encoding/json are equal.
	HTML
)

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string token: control characters as \n,
// \r, \t, \b, \f or \u00XX, invalid UTF-8 as U+FFFD (written as the
// replacement character itself with Plain, as \ufffd with HTML, which is
// encoding/json's choice), U+2028 and U+2029 escaped, and <, > and &
// escaped with HTML.
func AppendString(dst []byte, s string, e Escaping) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && (e == Plain || c != '<' && c != '>' && c != '&') {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			if e == HTML {
				dst = append(dst, `\ufffd`...)
			} else {
				dst = append(dst, "\ufffd"...)
			}
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// AppendValue appends the JSON of v, a tree as Parse builds it
// (map[string]any, []any, string, json.Number, bool, nil), with object
// members sorted by name: exactly what encoding/json.Marshal writes for it
// with HTML escaping, without its reflection. Any other Go value is
// encoded by encoding/json (null when it cannot be).
func AppendValue(dst []byte, v any, e Escaping) []byte {
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...)
	case string:
		return AppendString(dst, x, e)
	case json.Number:
		if x == "" {
			return append(dst, '0')
		}
		return append(dst, x...)
	case bool:
		if x {
			return append(dst, "true"...)
		}
		return append(dst, "false"...)
	case []any:
		dst = append(dst, '[')
		for i, el := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = AppendValue(dst, el, e)
		}
		return append(dst, ']')
	case map[string]any:
		var buf [16]string
		names := buf[:0]
		for k := range x {
			names = append(names, k)
		}
		slices.Sort(names)
		dst = append(dst, '{')
		for i, k := range names {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = AppendString(dst, k, e)
			dst = append(dst, ':')
			dst = AppendValue(dst, x[k], e)
		}
		return append(dst, '}')
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return append(dst, "null"...)
	}
	return append(dst, raw...)
}

// Canonical returns a tree's JSON with members sorted and HTML escaping
// (AppendValue), so that two values are the same exactly when their
// canonical forms are equal. Numbers keep their digits.
func Canonical(v any) string { return string(AppendValue(nil, v, HTML)) }

// CanonicalText returns the canonical form (Canonical) of the JSON text b,
// and false when b is not valid JSON.
func CanonicalText(b []byte) (string, bool) {
	v, ok := Parse(b)
	if !ok {
		return "", false
	}
	return Canonical(v), true
}

// AppendCompact appends the valid JSON text b without the whitespace
// between its tokens; every token keeps its bytes, and a repeated name
// stays repeated (compare Canonical).
func AppendCompact(dst, b []byte) []byte {
	s := scanner{b: b}
	for s.i < len(b) {
		switch c := b[s.i]; c {
		case ' ', '\t', '\r', '\n':
			s.i++
		case '"':
			start := s.i
			s.skipString()
			dst = append(dst, b[start:s.i]...)
		default:
			dst = append(dst, c)
			s.i++
		}
	}
	return dst
}
