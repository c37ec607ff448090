package jsontext

import (
	"bytes"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// The lenient rules are for a security boundary, where what matters is what
// the receiver will execute, not what the text says by the exact rules
// above (issue 23; DESIGN.md, "Decide on what the server will execute").
// Two readings are common, and a policy must be right under both:
//
//   - exact: JavaScript's JSON.parse, Python's json, encoding/json into a
//     map: a member is found by its exact name, the last of duplicates wins;
//   - folded: encoding/json into a tagged struct: a member is found by its
//     name under case folding (Fold), the last of those that fold alike
//     wins, so "Name", "NAME" and "name" all fill the field "name".
//
// A reader that decides on such a text reads each member it needs with
// LookupFold, which returns the folded reading and says when the exact one
// differs, and refuses the text then; it checks a value it passes on whole
// (a tool's arguments) with OddName. Decoders are also lenient about the
// text itself: Lenient returns what they read in a text Valid refuses.

// Fold returns name as encoding/json folds a member name to match it with a
// struct field's: ASCII letters upper-cased, any other rune as the smallest
// of its Unicode simple case folding orbit (bytes.EqualFold's rule), so
// that "K" (U+212A, the Kelvin sign) folds as "k" does and "ſ" (U+017F) as
// "s". Two names the folded reading takes for the same field have equal
// folds.
func Fold(name string) string {
	ascii := true
	for i := 0; i < len(name); i++ {
		if c := name[i]; c >= utf8.RuneSelf || 'a' <= c && c <= 'z' {
			ascii = false
			break
		}
	}
	if ascii {
		return name
	}
	var b strings.Builder
	b.Grow(len(name))
	for _, r := range name {
		b.WriteRune(foldRune(r))
	}
	return b.String()
}

// FoldsTo reports whether name's fold (Fold) is fold, without building it.
func FoldsTo(name []byte, fold string) bool { return foldsTo(name, fold) }

func foldsTo(name []byte, fold string) bool {
	if len(name) == len(fold) {
		ascii := true
		for i, c := range name {
			if c >= utf8.RuneSelf {
				ascii = false
				break
			}
			if 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			}
			if c != fold[i] {
				return false
			}
		}
		if ascii {
			return true
		}
	}
	j := 0
	for i := 0; i < len(name); {
		r, n := rune(name[i]), 1
		if r >= utf8.RuneSelf {
			r, n = utf8.DecodeRune(name[i:])
		}
		i += n
		f := foldRune(r)
		if f < utf8.RuneSelf {
			if j >= len(fold) || fold[j] != byte(f) {
				return false
			}
			j++
			continue
		}
		g, m := utf8.DecodeRuneInString(fold[j:])
		if g != f {
			return false
		}
		j += m
	}
	return j == len(fold)
}

func foldRune(r rune) rune {
	if r < utf8.RuneSelf {
		if 'a' <= r && r <= 'z' {
			r -= 'a' - 'A'
		}
		return r
	}
	for {
		r2 := unicode.SimpleFold(r)
		if r2 <= r {
			return r2
		}
		r = r2
	}
}

// Folded reports whether name is spelled in its canonical lower-case form
// (each rune the lower case of its fold): the only spelling of a name that
// both readings read as the same member whatever a struct's tag is, given
// tags in lower case, as every schema the guards know spells them. "order_id"
// is folded; "Order_ID", "orderId" and "reaſon" are not.
func Folded(name string) bool {
	for i := 0; i < len(name); i++ {
		if c := name[i]; c >= utf8.RuneSelf {
			return foldedRunes(name)
		} else if 'A' <= c && c <= 'Z' {
			return false
		}
	}
	return true
}

func foldedRunes(name string) bool {
	for _, r := range name {
		if r != unicode.ToLower(foldRune(r)) {
			return false
		}
	}
	return true
}

// LookupFold returns the value of the last member of obj (valid JSON) whose
// name folds as name does: the folded reading. found is false when there is
// none. odd is the spelling of that member when it is not name exactly, so
// that the exact reading differs (it finds an earlier member, or none);
// odd is "" when both readings agree.
func LookupFold(obj []byte, name string) (val []byte, found bool, odd string) {
	fold := Fold(name)
	var last []byte
	for k, v := range Members(obj) {
		if string(k) == name {
			val, found, last = v, true, nil
			continue
		}
		if foldsTo(k, fold) {
			val, found, last = v, true, k
		}
	}
	if last != nil {
		odd = string(last)
	}
	return val, found, odd
}

// OddName returns the path (as "a.b[0].C") of the first member within the
// valid JSON value v that the two readings may read differently: one whose
// name is not Folded, or whose name or string value holds an escaped lone
// surrogate (which encoding/json reads as U+FFFD and JSON.parse keeps);
// "" when there is none. A value that passes reads the same under both
// readings, duplicates aside, which both decide by the last.
func OddName(v []byte) string {
	var path []byte
	if oddName(v, &path) {
		return string(path)
	}
	return ""
}

func oddName(v []byte, path *[]byte) bool {
	switch Kind(v) {
	case '{':
		for tok, val := range RawMembers(v) {
			name := unquoteBytes(tok)
			at := len(*path)
			if at > 0 {
				*path = append(*path, '.')
			}
			*path = append(*path, name...)
			if !Folded(string(name)) || LoneSurrogate(tok) || Kind(val) == '"' && LoneSurrogate(val) || oddName(val, path) {
				return true
			}
			*path = (*path)[:at]
		}
	case '[':
		i := 0
		for el := range Elements(v) {
			at := len(*path)
			*path = append(*path, '[')
			*path = appendInt(*path, i)
			*path = append(*path, ']')
			if Kind(el) == '"' && LoneSurrogate(el) || oddName(el, path) {
				return true
			}
			*path = (*path)[:at]
			i++
		}
	}
	return false
}

func appendInt(b []byte, i int) []byte {
	if i >= 10 {
		b = appendInt(b, i/10)
	}
	return append(b, byte('0'+i%10))
}

// LoneSurrogate reports whether tok, a string token from valid JSON, holds
// an escaped surrogate that is not half of a pair: encoding/json decodes it
// as U+FFFD, JSON.parse keeps it, so the two read different strings.
func LoneSurrogate(tok []byte) bool {
	in := tok[1 : len(tok)-1]
	for i := 0; ; {
		j := bytes.IndexByte(in[i:], '\\')
		if j < 0 {
			return false
		}
		i += j
		if in[i+1] != 'u' {
			i += 2
			continue
		}
		r := hex4(in[i+2 : i+6])
		i += 6
		if !utf16.IsSurrogate(r) {
			continue
		}
		if r >= 0xDC00 || i+6 > len(in) || in[i] != '\\' || in[i+1] != 'u' {
			return true
		}
		if utf16.DecodeRune(r, hex4(in[i+2:i+6])) == unicode.ReplacementChar {
			return true
		}
		i += 6
	}
}

// Lenient returns the JSON text common decoders read in b when b itself is
// not valid JSON, and what they forgave: encoding/json and Node's UTF-8
// decoding read invalid UTF-8 as U+FFFD; Python's json reads NaN, Infinity
// and -Infinity (here as null, a value of their place) and a leading
// byte-order mark. ok is false when b is valid as it is (nothing to
// forgive) or is not JSON even so.
func Lenient(b []byte) (text []byte, forgiven string, ok bool) {
	if Valid(b) {
		return nil, "", false
	}
	var why []string
	t := b
	if bytes.HasPrefix(t, []byte("\xef\xbb\xbf")) {
		t, why = t[3:], append(why, "a byte-order mark")
	}
	if !utf8.Valid(t) {
		t, why = bytes.ToValidUTF8(t, []byte("\ufffd")), append(why, "invalid UTF-8")
	}
	if !Valid(t) {
		if n, changed := nonFinite(t); changed {
			t, why = n, append(why, "NaN or Infinity")
		}
	}
	if len(why) == 0 || !Valid(t) {
		return nil, "", false
	}
	return t, strings.Join(why, ", "), true
}

// nonFinite replaces NaN, Infinity and -Infinity outside strings with
// null, as Python's json reads them as numbers; changed is false when
// there is none.
func nonFinite(b []byte) ([]byte, bool) {
	out := make([]byte, 0, len(b)+8)
	changed, in := false, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if in {
			switch c {
			case '\\':
				out = append(out, c)
				i++
				if i < len(b) {
					out = append(out, b[i])
				}
				continue
			case '"':
				in = false
			}
			out = append(out, c)
			continue
		}
		if c == '"' {
			in = true
		}
		tok := ""
		for _, t := range [...]string{"-Infinity", "Infinity", "NaN"} {
			if bytes.HasPrefix(b[i:], []byte(t)) {
				tok = t
				break
			}
		}
		if tok == "" {
			out = append(out, c)
			continue
		}
		out = append(out, "null"...)
		i += len(tok) - 1
		changed = true
	}
	return out, changed
}
