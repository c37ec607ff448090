package jsontext

import (
	"bytes"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Unquote returns the text of tok, a JSON string token (quotes included)
// from valid JSON, decoded as encoding/json decodes it. Names and methods
// are short and almost never escaped, so the common case is one copy.
func Unquote(tok []byte) string {
	inner := tok[1 : len(tok)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return string(inner)
	}
	return string(AppendUnquote(make([]byte, 0, len(inner)), tok))
}

// unquoteBytes is Unquote without a copy when tok has no escapes: the
// result then aliases tok.
func unquoteBytes(tok []byte) []byte {
	inner := tok[1 : len(tok)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return inner
	}
	return AppendUnquote(make([]byte, 0, len(inner)), tok)
}

// AppendUnquote appends the text of tok, a JSON string token from valid
// JSON, to dst: escapes decoded, an escaped lone or broken surrogate as
// U+FFFD. Tool results are long escaped strings, which this decodes a run
// of plain bytes at a time.
func AppendUnquote(dst, tok []byte) []byte {
	in := tok[1 : len(tok)-1]
	for i := 0; i < len(in); {
		j := bytes.IndexByte(in[i:], '\\')
		if j < 0 {
			return append(dst, in[i:]...)
		}
		dst = append(dst, in[i:i+j]...)
		i += j
		switch c := in[i+1]; c {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r := hex4(in[i+2 : i+6])
			i += 6
			if utf16.IsSurrogate(r) {
				if i+6 <= len(in) && in[i] == '\\' && in[i+1] == 'u' {
					if d := utf16.DecodeRune(r, hex4(in[i+2:i+6])); d != unicode.ReplacementChar {
						dst = utf8.AppendRune(dst, d)
						i += 6
						continue
					}
				}
				r = unicode.ReplacementChar
			}
			dst = utf8.AppendRune(dst, r)
			continue
		default: // '"', '\\', '/'
			dst = append(dst, c)
		}
		i += 2
	}
	return dst
}

// hex4 decodes four hex digits, known to be valid.
func hex4(b []byte) rune {
	var r rune
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}
