package jsonrpc

// LooksLikeMessage reports, cheaply and from the start of a line alone,
// whether the line is JSON-RPC traffic: a batch, or an object with a method,
// result or error member before the first part it cannot see. It answers
// true when prefix ends before it can tell. The proxy uses it to warn about
// servers that log to stdout without validating every byte it forwards.
func LooksLikeMessage(prefix []byte) bool {
	s := tolerant{b: prefix}
	s.space()
	if s.i >= len(s.b) {
		return false
	}
	switch s.b[s.i] {
	case '[':
		return true
	case '{':
	default:
		return false
	}
	s.i++
	for {
		s.space()
		if s.i >= len(s.b) {
			return true // cut short: give it the benefit of the doubt
		}
		switch s.b[s.i] {
		case '}':
			return false
		case ',':
			s.i++
			s.space()
		}
		if s.i >= len(s.b) {
			return true
		}
		if s.b[s.i] != '"' {
			return false
		}
		start := s.i
		if !s.str() {
			return true
		}
		switch string(s.b[start:s.i]) {
		case `"method"`, `"result"`, `"error"`:
			return true
		}
		s.space()
		if s.i >= len(s.b) {
			return true
		}
		if s.b[s.i] != ':' {
			return false
		}
		s.i++
		s.space()
		if !s.value() {
			return s.i >= len(s.b)
		}
	}
}

// tolerant scans JSON that may be cut short or invalid; each step reports
// false when it cannot finish.
type tolerant struct {
	b []byte
	i int
}

func (s *tolerant) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\r', '\n':
			s.i++
		default:
			return
		}
	}
}

func (s *tolerant) str() bool {
	s.i++
	for s.i < len(s.b) {
		switch s.b[s.i] {
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

func (s *tolerant) value() bool {
	if s.i >= len(s.b) {
		return false
	}
	switch s.b[s.i] {
	case '"':
		return s.str()
	case '{', '[':
		depth := 0
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case '"':
				if !s.str() {
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
	default:
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
