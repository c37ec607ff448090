package jsonrpc

import (
	"iter"
	"strconv"

	"github.com/hoist-mcp/hoist/jsontext"
)

// Lenient is a line read as the most lenient common decoder reads it
// (jsontext's lenient rules): what a server will execute, for a policy that
// decides on it (issue 23). Its members are found by their names under case
// folding, the last of those that fold alike winning, as encoding/json
// fills a tagged struct; Odd names the first member an exact reader
// (JSON.parse, Python's json) reads otherwise, which such a policy refuses.
type Lenient struct {
	Message
	// Odd is the path of the first member two common readings read
	// differently ("Method", "params.Name", "[1].ID"), "" when they agree.
	Odd string
	// Forgiven says what common decoders forgive in a line that is not
	// valid JSON but that they read as one ("invalid UTF-8"); "" for a
	// valid line. Message then describes what they read.
	Forgiven string
}

// envelope are the members of a message, folded, in the order Odd checks
// them.
var envelope = [...]string{"ID", "METHOD", "PARAMS", "RESULT", "ERROR", "JSONRPC"}

var envelopeNames = [...]string{"id", "method", "params", "result", "error", "jsonrpc"}

// ClassifyLenient classifies line (without terminator) as the most lenient
// common decoder reads it. A line that is not JSON even leniently is
// NotJSON, as Classify says.
func ClassifyLenient(line []byte) Lenient {
	text := line
	var l Lenient
	if !jsontext.Valid(line) {
		t, why, ok := jsontext.Lenient(line)
		if !ok {
			return Lenient{Message: Message{Kind: NotJSON, Raw: line}}
		}
		text, l.Forgiven = t, why
	}
	l.Message, l.Odd = classifyFold(text)
	l.Raw = line
	return l
}

// MessagesLenient yields the messages of a line read leniently: the line,
// or each element of a batch (whose Odd paths start with its index).
func MessagesLenient(line []byte) iter.Seq[Lenient] {
	return func(yield func(Lenient) bool) {
		l := ClassifyLenient(line)
		if l.Kind != Batch {
			yield(l)
			return
		}
		text := line
		if l.Forgiven != "" {
			text, _, _ = jsontext.Lenient(line)
		}
		i := 0
		for el := range jsontext.Elements(text) {
			m, odd := classifyFold(el)
			e := Lenient{Message: m, Forgiven: l.Forgiven}
			if odd != "" {
				e.Odd = "[" + strconv.Itoa(i) + "]." + odd
			}
			if !yield(e) {
				return
			}
			i++
		}
	}
}

// classifyFold is classifyValid with names matched under case folding, and
// the first member the readings disagree on.
func classifyFold(line []byte) (Message, string) {
	switch jsontext.Kind(line) {
	case '[':
		return Message{Kind: Batch, Raw: line, Len: jsontext.Len(line)}, ""
	case '{':
	default:
		return Message{Kind: Invalid, Raw: line}, ""
	}
	var vals [len(envelope)][]byte
	var odd [len(envelope)]string
	for key, val := range jsontext.Members(line) {
		for i, f := range envelope {
			if string(key) == envelopeNames[i] {
				vals[i], odd[i] = val, ""
			} else if jsontext.FoldsTo(key, f) {
				vals[i], odd[i] = val, string(key)
			}
		}
	}
	for _, o := range odd {
		if o != "" {
			return fromMembers(line, vals), o
		}
	}
	m := fromMembers(line, vals)
	if v := vals[1]; v != nil && v[0] == '"' && jsontext.LoneSurrogate(v) {
		return m, "method"
	}
	return m, ""
}

// fromMembers is the message of an object whose members id, method,
// params, result and error (envelope's order) are vals.
func fromMembers(line []byte, vals [len(envelope)][]byte) Message {
	m := Message{Raw: line, ID: vals[0], Params: vals[2], Result: vals[3]}
	hasMethod := vals[1] != nil && vals[1][0] == '"'
	if hasMethod {
		m.Method = jsontext.Unquote(vals[1])
	}
	if e := vals[4]; e != nil && string(e) != "null" {
		m.Error = e
	}
	m.setKind(hasMethod)
	return m
}
