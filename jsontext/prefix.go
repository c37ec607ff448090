package jsontext

// PrefixEnd says how a ScanPrefix ended.
type PrefixEnd uint8

// The ends of a prefix scan.
const (
	// PrefixClosed: the object closed within the prefix.
	PrefixClosed PrefixEnd = iota
	// PrefixCut: the prefix ended before the object did, or before the scan
	// could tell what comes next.
	PrefixCut
	// PrefixBad: a byte that cannot continue a JSON object (or the text
	// does not start with one).
	PrefixBad
	// PrefixStopped: fn asked to stop.
	PrefixStopped
)

// ScanPrefix reads the start of a JSON object that may be cut short or not
// JSON at all, such as the first piece of a long wire line or a damaged log
// line: it calls fn with the decoded name of each top-level member whose
// name it can read, in order, and the value's bytes (found by their
// boundaries, not checked inside), or nil for a value that is cut short or
// broken, until fn returns false; and it says how the scan ended.
func ScanPrefix(prefix []byte, fn func(name, value []byte) bool) PrefixEnd {
	s := scanner{b: prefix}
	s.space()
	if s.i >= len(s.b) {
		return PrefixCut
	}
	if s.b[s.i] != '{' {
		return PrefixBad
	}
	s.i++
	s.space()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		return PrefixClosed
	}
	for {
		s.space()
		if s.i >= len(s.b) {
			return PrefixCut
		}
		if s.b[s.i] != '"' {
			return PrefixBad
		}
		start := s.i
		if !s.skipString() {
			return PrefixCut
		}
		name := unquoteTolerant(s.b[start:s.i])
		s.space()
		if s.i >= len(s.b) {
			fn(name, nil)
			return PrefixCut
		}
		if s.b[s.i] != ':' {
			return PrefixBad
		}
		s.i++
		s.space()
		vstart := s.i
		if !s.skipValue() {
			if !fn(name, nil) {
				return PrefixStopped
			}
			if s.i >= len(s.b) {
				return PrefixCut
			}
			return PrefixBad
		}
		if !fn(name, s.b[vstart:s.i]) {
			return PrefixStopped
		}
		switch s.after('}') {
		case sepClose:
			return PrefixClosed
		case sepCut:
			return PrefixCut
		case sepBad:
			return PrefixBad
		}
	}
}

// unquoteTolerant decodes a name token that was not validated: a name with
// a bad escape is returned as its raw inner bytes.
func unquoteTolerant(tok []byte) []byte {
	if n, ok := ValueLen(tok); ok && n == len(tok) {
		return unquoteBytes(tok)
	}
	return tok[1 : len(tok)-1]
}
