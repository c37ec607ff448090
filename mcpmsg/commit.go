package mcpmsg

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/hoist-mcp/hoist/jsontext"
)

// What hoist_commit means on the wire (manual, "Active mode", --commit): the
// tool hoist-mcp adds to the server's list, the sentence it adds to the
// server's instructions, the calls the tool takes, the ids of the calls
// the proxy makes for it, and the result it answers with. The proxy writes
// them and the episode builder reads them, here, in one place.

// CommitTool is the name of the tool --commit adds.
const CommitTool = "hoist_commit"

// CommitToolEntry is hoist_commit's entry in a tools/list result: its input
// schema is {"calls": [{"name", "arguments"}, …]}. It is annotated as a
// write (readOnlyHint false), since every call it makes may be one.
const CommitToolEntry = `{"name":"hoist_commit","title":"Make confirmed changes in one step",` +
	`"description":"Makes several tool calls in order, in one step: the changes the user has already confirmed. Each call is checked against the policy first; the first call that is refused or fails stops the rest. Returns every call's result and the calls that were not run.",` +
	`"inputSchema":{"type":"object","properties":{"calls":{"type":"array","description":"The calls to make, in order.","items":{"type":"object","properties":{"name":{"type":"string","description":"The tool to call."},"arguments":{"type":"object","description":"Its arguments."}},"required":["name"]}}},"required":["calls"]},` +
	`"annotations":{"readOnlyHint":false,"destructiveHint":true,"idempotentHint":false}}`

// CommitInstructions is the sentence that follows the server's own
// instructions in its answer to initialize (or becomes them): hosts such as
// Claude Code put instructions in the system prompt, and a tool alone does
// not tell the agent when to use it.
const CommitInstructions = "When the user has confirmed several changes, make them in one step with hoist_commit, which runs the calls in order, checks each against the policy first, and stops at the first that is refused or fails."

// CommitIDPrefix starts the id of each call the proxy makes for a
// hoist_commit: "hoist-commit-<n>", a proxy id (IsProxyID) that says the
// call is the agent's own, made through hoist_commit, not a flow's lookup.
const CommitIDPrefix = ProxyIDPrefix + "commit-"

// CommitID returns the id of the proxy's n-th call for hoist_commit in a
// session.
func CommitID(n uint64) json.RawMessage {
	b := append([]byte(`"`), CommitIDPrefix...)
	b = strconv.AppendUint(b, n, 10)
	return append(b, '"')
}

// IsCommitID reports whether a raw id is one CommitID made.
func IsCommitID(id []byte) bool {
	return len(id) > len(CommitIDPrefix)+2 && id[0] == '"' && bytes.HasPrefix(id[1:], []byte(CommitIDPrefix))
}

// CommitCall is one call hoist_commit is asked to make.
type CommitCall struct {
	Name string `json:"name"`
	// Args are the call's arguments as sent (nil when absent).
	Args json.RawMessage `json:"arguments,omitempty"`
}

// ReadCommit reads hoist_commit's arguments, {"calls": [{"name",
// "arguments"}, …]}. The error names the member that is not as the schema
// has it, for the agent to correct.
func ReadCommit(args []byte) ([]CommitCall, error) {
	if jsontext.Kind(args) != '{' {
		return nil, errors.New(`the arguments must be an object: {"calls": [{"name": …, "arguments": {…}}, …]}`)
	}
	list, ok := jsontext.Lookup(args, "calls")
	if !ok || jsontext.Kind(list) != '[' {
		return nil, errors.New(`"calls" must be a list of {"name": …, "arguments": {…}}`)
	}
	var calls []CommitCall
	i := 0
	for el := range jsontext.Elements(list) {
		var c CommitCall
		var name []byte
		if jsontext.Kind(el) == '{' {
			read(el, member{"name", func(v []byte) { name = v }}, member{"arguments", &c.Args})
		}
		switch {
		case jsontext.Kind(name) != '"' || jsontext.Unquote(name) == "":
			return nil, fmt.Errorf("calls[%d]: each call needs a \"name\", the tool to call", i)
		case c.Args != nil && jsontext.Kind(c.Args) != '{':
			return nil, fmt.Errorf("calls[%d].arguments: must be an object", i)
		}
		c.Name = jsontext.Unquote(name)
		if c.Name == CommitTool {
			return nil, fmt.Errorf("calls[%d]: hoist_commit cannot call itself", i)
		}
		calls = append(calls, c)
		i++
	}
	if len(calls) == 0 {
		return nil, errors.New(`"calls" is empty: name at least one call`)
	}
	return calls, nil
}

// The statuses of a call in hoist_commit's result.
const (
	CommitDone    = "done"    // the server answered it without an error
	CommitFailed  = "failed"  // the server answered it with an error
	CommitRefused = "refused" // the policy check refused it: it never reached the server
	CommitNotRun  = "not_run" // a call before it was refused or failed
)

// CommitStep is one call of a hoist_commit and what became of it.
type CommitStep struct {
	CommitCall
	Status string `json:"status"`
	// Text is the call's result text (the refusal, for a refused call); ""
	// for one not run.
	Text string `json:"text,omitempty"`
}

// FormatCommit returns the text of hoist_commit's result: a line that says
// how far it got, then each call with its status and result.
func FormatCommit(steps []CommitStep) string {
	var b strings.Builder
	ran, stop := 0, -1
	for i, s := range steps {
		if s.Status == CommitDone || s.Status == CommitFailed {
			ran++
		}
		if stop < 0 && (s.Status == CommitFailed || s.Status == CommitRefused) {
			stop = i
		}
	}
	switch {
	case stop < 0:
		fmt.Fprintf(&b, "hoist_commit made all %d call(s).", len(steps))
	default:
		why := "failed"
		if steps[stop].Status == CommitRefused {
			why = "was refused by the policy check"
		}
		fmt.Fprintf(&b, "hoist_commit stopped at call %d of %d, which %s; %d call(s) were made, and the %d after it were not run.",
			stop+1, len(steps), why, ran, len(steps)-stop-1)
	}
	for i, s := range steps {
		fmt.Fprintf(&b, "\n\n%d. %s ", i+1, s.Name)
		if len(s.Args) == 0 {
			b.WriteString("{}")
		} else {
			b.Write(s.Args)
		}
		fmt.Fprintf(&b, ": %s", strings.ReplaceAll(s.Status, "_", " "))
		if s.Text != "" {
			b.WriteString("\n")
			b.WriteString(s.Text)
		}
	}
	return b.String()
}

// AppendCommitResult appends hoist_commit's answer to the request id (raw):
// a tool result whose text is FormatCommit's, whose structuredContent is
// {"calls": [steps]}, and which is an error unless every call was done.
func AppendCommitResult(dst []byte, id json.RawMessage, steps []CommitStep) []byte {
	isErr := false
	for _, s := range steps {
		isErr = isErr || s.Status != CommitDone
	}
	structured := []byte(`{"calls":[`)
	for i, s := range steps {
		if i > 0 {
			structured = append(structured, ',')
		}
		structured = append(structured, `{"name":`...)
		structured = jsontext.AppendString(structured, s.Name, jsontext.Plain)
		if len(s.Args) > 0 {
			structured = append(structured, `,"arguments":`...)
			structured = append(structured, s.Args...)
		}
		structured = append(structured, `,"status":`...)
		structured = jsontext.AppendString(structured, s.Status, jsontext.Plain)
		if s.Text != "" {
			structured = append(structured, `,"text":`...)
			structured = jsontext.AppendString(structured, s.Text, jsontext.Plain)
		}
		structured = append(structured, '}')
	}
	structured = append(structured, "]}"...)
	return AppendToolResult(dst, id, FormatCommit(steps), isErr, structured)
}

// AppendToolResult appends a tools/call response to id (raw) with one text
// item, isError, and structuredContent (raw JSON; nil for none), without a
// line terminator: the answers the proxy gives of its own, a refusal and
// hoist_commit's.
func AppendToolResult(dst []byte, id json.RawMessage, text string, isError bool, structured json.RawMessage) []byte {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = append(dst, id...)
	dst = append(dst, `,"result":{"content":[{"type":"text","text":`...)
	dst = jsontext.AppendString(dst, text, jsontext.Plain)
	dst = append(dst, `}]`...)
	if len(structured) > 0 {
		dst = append(dst, `,"structuredContent":`...)
		dst = append(dst, structured...)
	}
	dst = append(dst, `,"isError":`...)
	dst = strconv.AppendBool(dst, isError)
	return append(dst, "}}"...)
}

// ToolsArray returns result.tools of the response line resp (a tools/list
// result, valid JSON, without terminator): the array's bytes, a subslice of
// resp. ok is false when resp has no result with a tools list.
func ToolsArray(resp []byte) (tools []byte, ok bool) {
	result, found := jsontext.Lookup(resp, "result")
	if !found || jsontext.Kind(result) != '{' {
		return nil, false
	}
	tools, found = jsontext.Lookup(result, "tools")
	if !found || jsontext.Kind(tools) != '[' {
		return nil, false
	}
	return tools, true
}

// AppendTool returns the response line resp (a tools/list result, valid
// JSON, without terminator) with tool (a tool entry's JSON) as the last of
// result.tools; every other byte stays as the server sent it. ok is false
// when resp has no result with a tools list.
func AppendTool(resp []byte, tool string) (_ []byte, ok bool) {
	tools, ok := ToolsArray(resp)
	if !ok {
		return nil, false
	}
	end := jsontext.Offset(resp, tools) + len(tools) - 1 // the closing ]
	out := make([]byte, 0, len(resp)+len(tool)+1)
	out = append(out, resp[:end]...)
	if jsontext.Len(tools) > 0 {
		out = append(out, ',')
	}
	out = append(out, tool...)
	return append(out, resp[end:]...), true
}

// AppendInstructions returns the response line resp (an initialize or
// server/discover result, valid JSON, without terminator) with sentence
// after its instructions, on a paragraph of its own, or as its
// instructions when it gave none; every other byte stays as the server sent
// it. ok is false when resp has no result object.
func AppendInstructions(resp []byte, sentence string) (_ []byte, ok bool) {
	result, found := jsontext.Lookup(resp, "result")
	if !found || jsontext.Kind(result) != '{' {
		return nil, false
	}
	if old, found := jsontext.Lookup(result, "instructions"); found {
		text := sentence
		if jsontext.Kind(old) == '"' {
			if s := jsontext.Unquote(old); strings.TrimSpace(s) != "" {
				text = strings.TrimRight(s, "\n") + "\n\n" + sentence
			}
		}
		at := jsontext.Offset(resp, old)
		out := make([]byte, 0, len(resp)+len(sentence)+8)
		out = append(out, resp[:at]...)
		out = jsontext.AppendString(out, text, jsontext.Plain)
		return append(out, resp[at+len(old):]...), true
	}
	at := jsontext.Offset(resp, result) + 1 // after the opening {
	out := make([]byte, 0, len(resp)+len(sentence)+20)
	out = append(out, resp[:at]...)
	out = append(out, `"instructions":`...)
	out = jsontext.AppendString(out, sentence, jsontext.Plain)
	if hasMembers(result) {
		out = append(out, ',')
	}
	return append(out, resp[at:]...), true
}

// hasMembers reports whether an object (valid JSON) has any member.
func hasMembers(obj []byte) bool {
	for range jsontext.Members(obj) {
		return true
	}
	return false
}

// ReadCommitResult reads the steps of hoist_commit's answer from its
// structuredContent, as AppendCommitResult wrote them; nil when it holds
// none (an answer that made no call, or not hoist_commit's).
func ReadCommitResult(structured []byte) []CommitStep {
	list, ok := jsontext.Lookup(structured, "calls")
	if !ok || jsontext.Kind(list) != '[' {
		return nil
	}
	var steps []CommitStep
	for el := range jsontext.Elements(list) {
		var s CommitStep
		read(el, member{"name", &s.Name}, member{"arguments", &s.Args}, member{"status", &s.Status}, member{"text", &s.Text})
		if s.Name == "" || s.Status == "" {
			continue
		}
		steps = append(steps, s)
	}
	return steps
}
