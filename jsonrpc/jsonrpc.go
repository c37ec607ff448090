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
	"encoding/json"
	"iter"

	"github.com/hoist-mcp/hoist/jsontext"
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

// Message is what Classify learned of one line. ID, Params, Result and
// Error alias the line that was classified; copy them to keep them past the
// line.
type Message struct {
	Kind Kind
	// Raw is the message exactly as sent: the line, or a batch's element.
	Raw json.RawMessage
	// ID is the id member exactly as sent (e.g. `7`, `"q-17"`, `null`), or
	// nil when there is none.
	ID json.RawMessage
	// Method is the method of a request or notification.
	Method string
	// IsError is true for a response that carries an error member (not
	// null).
	IsError bool
	// Params, Result and Error are those members exactly as sent, or nil
	// when absent; an error member of null counts as absent, since some
	// servers send "error": null beside their result.
	Params, Result, Error json.RawMessage
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
// line first (jsontext.Valid), so a line that Classify calls anything but
// NotJSON may be embedded verbatim in another JSON document. Member names
// are matched exactly and a repeated member counts as its last occurrence
// (jsontext's rules).
func Classify(line []byte) Message {
	if !jsontext.Valid(line) {
		return Message{Kind: NotJSON, Raw: line}
	}
	return classifyValid(line)
}

// ClassifyValid is Classify of a line its caller has already validated
// (jsontext.Valid, or a whole log line jsontext.ValidDepth took, as the
// session-log reader does with the message it holds): it scans the line
// once instead of twice. Given a line that is not valid JSON, its answer is
// undefined.
func ClassifyValid(line []byte) Message { return classifyValid(line) }

// Messages yields the JSON-RPC messages of a line (without terminator):
// the line itself, or each element of a batch, classified. A line that is
// not JSON yields one message of kind NotJSON.
func Messages(line []byte) iter.Seq[Message] {
	if !jsontext.Valid(line) {
		return func(yield func(Message) bool) { yield(Message{Kind: NotJSON, Raw: line}) }
	}
	return MessagesValid(line)
}

// MessagesValid is Messages of a line its caller has already validated (see
// ClassifyValid).
func MessagesValid(line []byte) iter.Seq[Message] {
	return func(yield func(Message) bool) {
		m := classifyValid(line)
		if m.Kind != Batch {
			yield(m)
			return
		}
		for el := range jsontext.Elements(line) {
			if !yield(classifyValid(el)) {
				return
			}
		}
	}
}

// classifyValid classifies a line already known to be valid JSON.
func classifyValid(line []byte) Message {
	switch jsontext.Kind(line) {
	case '[':
		return Message{Kind: Batch, Raw: line, Len: jsontext.Len(line)}
	case '{':
	default:
		return Message{Kind: Invalid, Raw: line}
	}
	m := Message{Raw: line}
	var hasMethod bool
	for key, val := range jsontext.Members(line) {
		switch string(key) {
		case "id":
			m.ID = json.RawMessage(val)
		case "method":
			hasMethod = val[0] == '"'
			m.Method = ""
			if hasMethod {
				m.Method = jsontext.Unquote(val)
			}
		case "params":
			m.Params = json.RawMessage(val)
		case "result":
			m.Result = json.RawMessage(val)
		case "error":
			m.Error = nil
			if string(val) != "null" {
				m.Error = json.RawMessage(val)
			}
		}
	}
	m.setKind(hasMethod)
	return m
}

// setKind sets the kind of an object message from its members: hasMethod
// says it has a method that is a string.
func (m *Message) setKind(hasMethod bool) {
	hasResult, hasError := m.Result != nil, m.Error != nil
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
}
