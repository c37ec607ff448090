package mcpmsg

import (
	"encoding/json"
	"strings"

	"github.com/hoist-mcp/hoist/jsonrpc"
	"github.com/hoist-mcp/hoist/jsontext"
)

// Method names hoist reads.
const (
	MethodInitialize = "initialize"
	MethodToolsList  = "tools/list"
	MethodToolsCall  = "tools/call"
	MethodCancelled  = "notifications/cancelled"
)

// Call is a tools/call request's params: the tool's name and its
// arguments, exactly as sent (nil when absent).
type Call struct {
	Name string
	Args json.RawMessage
}

// CallOf returns the call m makes, and whether m is a tools/call request.
func CallOf(m jsonrpc.Message) (Call, bool) {
	if m.Kind != jsonrpc.Request || m.Method != MethodToolsCall {
		return Call{}, false
	}
	return ReadCall(m.Params), true
}

// ReadCall reads a tools/call's params. A call whose params are missing or
// of another shape is still a call, of a tool with no name.
func ReadCall(params []byte) Call {
	var c Call
	read(params, member{"name", &c.Name}, member{"arguments", &c.Args})
	return c
}

// Result is what a tools/call response says.
type Result struct {
	// Texts are the result's text content items, in order; for a JSON-RPC
	// error, its message.
	Texts []string
	// IsError is true for a JSON-RPC error and for a result with isError
	// true.
	IsError bool
	// RPCError is true for a JSON-RPC error rather than a result.
	RPCError bool
	// Structured is the result's structuredContent, raw, or nil.
	Structured json.RawMessage
}

// Text returns the text items joined by newlines: what the agent reads,
// and what a binding's $text is.
func (r Result) Text() string { return strings.Join(r.Texts, "\n") }

// ResultOf reads the response m to a tools/call. A response with neither a
// result nor an error (which Classify does not call a response) reads as
// an error with no text.
func ResultOf(m jsonrpc.Message) Result {
	if m.Error != nil {
		r := Result{IsError: true, RPCError: true}
		if msg, ok := jsontext.Lookup(m.Error, "message"); ok && msg[0] == '"' {
			r.Texts = []string{jsontext.Unquote(msg)}
		}
		return r
	}
	if m.Result == nil {
		return Result{IsError: true}
	}
	return ReadResult(m.Result)
}

// ReadResult reads a tools/call result member (valid JSON). It walks the
// result once, reading the content list where it stands: ingest reads
// every result of every log, and most of a result's bytes are its text.
// A member repeated counts as its last occurrence, as read decides.
func ReadResult(result []byte) Result {
	var r Result
	c := jsontext.NewCursor(result)
	if !c.Enter('{') {
		return r
	}
	for c.More('}') {
		switch name := c.Name(); {
		case isName(name, "isError"):
			r.IsError = string(c.Value()) == "true"
		case isName(name, "structuredContent"):
			r.Structured = json.RawMessage(c.Value())
		case isName(name, "content"):
			r.Texts = textPartsAt(&c, isText)
		default:
			c.Value()
		}
	}
	return r
}

// isText accepts a tool result's text items: type "text".
func isText(typ []byte) bool { return string(typ) == `"text"` }

// Tool is one tool as a tools/list result lists it; the raw members are
// exactly as sent, nil when absent.
type Tool struct {
	Name, Title, Description string
	InputSchema              json.RawMessage
	OutputSchema             json.RawMessage
	Annotations              json.RawMessage
}

// ReadOnly returns the tool's readOnlyHint, and whether it gives one (a
// boolean).
func (t Tool) ReadOnly() (readOnly, ok bool) { return ReadOnlyHint(t.Annotations) }

// ReadOnlyHint returns the readOnlyHint of a tool's annotations, and whether
// they give one as a boolean.
func ReadOnlyHint(annotations []byte) (readOnly, ok bool) {
	v, found := jsontext.Lookup(annotations, "readOnlyHint")
	switch {
	case !found:
		return false, false
	case string(v) == "true":
		return true, true
	case string(v) == "false":
		return false, true
	}
	return false, false
}

// ReadTools reads a tools/list result: its tools in order (a tool without
// a name is left out) and nextCursor ("" on the last page).
func ReadTools(result []byte) (tools []Tool, nextCursor string) {
	read(result, member{"nextCursor", &nextCursor}, member{"tools", func(v []byte) {
		tools = tools[:0]
		for el := range jsontext.Elements(v) {
			var t Tool
			read(el, member{"name", &t.Name}, member{"title", &t.Title}, member{"description", &t.Description},
				member{"inputSchema", &t.InputSchema}, member{"outputSchema", &t.OutputSchema}, member{"annotations", &t.Annotations})
			if t.Name != "" {
				tools = append(tools, t)
			}
		}
	}})
	return tools, nextCursor
}

// CancelledID returns the requestId of a notifications/cancelled's params,
// raw, or nil.
func CancelledID(params []byte) json.RawMessage {
	v, ok := jsontext.Lookup(params, "requestId")
	if !ok {
		return nil
	}
	return json.RawMessage(v)
}

// ResultKind is what a response's result describes, told from its members
// alone (a response does not name its method).
type ResultKind uint8

// The kinds of result.
const (
	OtherResult ResultKind = iota
	// ServerResult describes the server itself: initialize's or
	// server/discover's result, or a list of its tools, resources or
	// prompts.
	ServerResult
)

// KindOfResult says what a result describes.
func KindOfResult(result []byte) ResultKind {
	for k := range jsontext.Members(result) {
		switch string(k) {
		case "tools", "protocolVersion", "supportedVersions", "resources", "prompts":
			return ServerResult
		}
	}
	return OtherResult
}
