// Package jsonrpc classifies single wire lines of MCP's JSON-RPC 2.0 without
// re-encoding them.
//
// The proxy forwards every line byte for byte (hoist-mcp manual, "Log
// format"; the peer proxy's "Bytes, exactly"), so nothing here builds a
// message: Classify only looks at the top-level members of a line to say
// what it is (request, notification, response, batch), its id as the raw
// bytes that were sent, and its method. Ids stay raw because "7" and 7 are
// different ids and numbers above 2^53 must survive (docs/mcp-wire.md §1).
package jsonrpc

import (
	"bytes"
	"encoding/json"
)

// Kind says what a wire line holds.
type Kind uint8

// The kinds of line, from the least to the most structured.
const (
	// NotJSON is a line that is not one valid UTF-8 JSON value.
	NotJSON Kind = iota
	// Invalid is valid JSON that is not a JSON-RPC message: a scalar, or an
	// object with neither a method nor a result or error.
	Invalid
	// Request has an id and a method.
	Request
	// Notification has a method and no id member at all.
	Notification
	// Response has an id and a result or an error, and no method.
	Response
	// Batch is a JSON array (MCP 2025-03-26 only, but forwarded whatever the
	// revision).
	Batch
)

var kindNames = [...]string{"not-json", "invalid", "request", "notification", "response", "batch"}

// String returns the kind's name as --trace prints it.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "unknown"
}

// IsMessage reports whether a line of this kind is JSON-RPC traffic.
func (k Kind) IsMessage() bool { return k >= Request }

// Message is what Classify learned of one line. ID and the bytes behind it
// alias the line that was classified; copy them to keep them past the line.
type Message struct {
	Kind Kind
	// ID is the id member exactly as sent (e.g. `7`, `"q-17"`, `null`), or
	// nil when there is none.
	ID json.RawMessage
	// Method is the method of a request or notification.
	Method string
	// IsError is true for a response that carries an error member.
	IsError bool
	// Len is the number of elements of a batch.
	Len int
}

// HasID reports whether the message carried an id member.
func (m Message) HasID() bool { return m.ID != nil }

// TrimLine returns line without its line terminator: one trailing "\n" and
// then one trailing "\r", the leniency both SDKs apply (mcp-wire.md §2).
func TrimLine(line []byte) []byte {
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line = line[:n-1]
	}
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line
}

// Classify reports what line (without its terminator) is. It validates the
// line first, so a line that Classify calls anything but NotJSON may be
// embedded verbatim in another JSON document.
func Classify(line []byte) Message {
	if !Valid(line) {
		return Message{Kind: NotJSON}
	}
	return classifyValid(line)
}

// classifyValid classifies a line already known to be valid JSON.
func classifyValid(line []byte) Message {
	s := scanner{b: line}
	s.space()
	if s.i >= len(s.b) {
		return Message{Kind: Invalid}
	}
	switch s.b[s.i] {
	case '[':
		return Message{Kind: Batch, Len: s.countArray()}
	case '{':
	default:
		return Message{Kind: Invalid}
	}
	var m Message
	var hasMethod, hasResult, hasError bool
	EachMember(line, func(key string, val []byte) {
		switch key {
		case "id":
			m.ID = json.RawMessage(val)
		case "method":
			// A repeated member counts as its last occurrence, as
			// encoding/json decodes it.
			hasMethod = len(val) > 0 && val[0] == '"'
			m.Method = ""
			if hasMethod {
				m.Method = Unquote(val)
			}
		case "result":
			hasResult = true
		case "error":
			hasError = true
		}
	})
	switch {
	case hasMethod && m.ID != nil:
		m.Kind = Request
	case hasMethod:
		m.Kind = Notification
	case (hasResult || hasError) && m.ID != nil:
		m.Kind = Response
		m.IsError = hasError
	case hasError:
		// 2025-11-25 allows an error response without an id when the
		// request's id could not be read (mcp-wire.md §1).
		m.Kind = Response
		m.IsError = true
	default:
		m.Kind = Invalid
	}
	return m
}

// EachMember calls fn with each member of the JSON object b, which must be
// valid JSON (see Valid), in order: the decoded key and the value's exact
// bytes, which alias b. Like encoding/json, a repeated key is seen each
// time, so the last one wins. It reads nothing but the members' boundaries,
// so a large value costs one pass over its bytes and no allocation.
func EachMember(b []byte, fn func(key string, val []byte)) {
	s := scanner{b: b}
	s.space()
	s.i++ // '{'
	for {
		s.space()
		if s.b[s.i] == '}' {
			return
		}
		if s.b[s.i] == ',' {
			s.i++
			s.space()
		}
		keyStart := s.i
		s.skipString()
		key := Unquote(s.b[keyStart:s.i])
		s.space()
		s.i++ // ':'
		s.space()
		valStart := s.i
		s.skipValue()
		fn(key, s.b[valStart:s.i])
	}
}

// EachElement calls fn with each element of the JSON array b, which must be
// valid JSON, in order: the element's exact bytes, which alias b.
func EachElement(b []byte, fn func(val []byte)) {
	s := scanner{b: b}
	s.space()
	s.i++ // '['
	for {
		s.space()
		if s.b[s.i] == ']' {
			return
		}
		if s.b[s.i] == ',' {
			s.i++
			s.space()
		}
		start := s.i
		s.skipValue()
		fn(s.b[start:s.i])
	}
}

// Unquote decodes a JSON string token known to be valid. Keys and method
// names are short and almost never escaped, so the fast path slices the
// quotes off.
func Unquote(tok []byte) string {
	inner := tok[1 : len(tok)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return string(inner)
	}
	var s string
	if err := json.Unmarshal(tok, &s); err != nil {
		return string(inner)
	}
	return s
}

// scanner walks JSON that is already known to be valid, so it checks
// nothing and never fails.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\r', '\n':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) skipString() {
	s.i++ // opening quote
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case '\\':
			s.i += 2
		case '"':
			s.i++
			return
		default:
			s.i++
		}
	}
}

func (s *scanner) skipValue() {
	switch s.b[s.i] {
	case '"':
		s.skipString()
	case '{', '[':
		depth := 0
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case '"':
				s.skipString()
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					s.i++
					return
				}
			}
			s.i++
		}
	default: // number, true, false, null
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case ',', '}', ']', ' ', '\t', '\r', '\n':
				return
			}
			s.i++
		}
	}
}

func (s *scanner) countArray() int {
	s.i++ // '['
	n := 0
	for {
		s.space()
		if s.b[s.i] == ']' {
			return n
		}
		if s.b[s.i] == ',' {
			s.i++
			s.space()
		}
		s.skipValue()
		n++
	}
}
