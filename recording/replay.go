package recording

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/hoist-mcp/hoist/jsonrpc"
	"github.com/hoist-mcp/hoist/jsontext"
	"github.com/hoist-mcp/hoist/mcplog"
	"github.com/hoist-mcp/hoist/mcpmsg"
	"github.com/hoist-mcp/hoist/toolpin"
)

// How says how a request was matched to a recorded one.
type How string

// The ways a request matches, tried in this order.
const (
	// Exact: the same method, and for a tools/call the same tool with
	// arguments equal as JSON values (member order ignored); for another
	// method, the same params as JSON values, _meta left out.
	Exact How = "exact"
	// Loose: a tools/call of the same tool whose arguments are equal once
	// strings are trimmed, their runs of spaces made one space and their
	// letters lower case, numbers compared by value (1 and 1.0), and
	// members whose value is null left out; for another method, any
	// recorded request of that method (initialize's clientInfo, a cursor).
	Loose How = "loose"
	// None: nothing recorded matches; the request is answered with an
	// error naming the nearest recorded call.
	None How = "none"
)

// Match is what Replayer.Match found for a request.
type Match struct {
	How How
	// Exchange is the recorded request whose answer is served, nil for
	// None.
	Exchange *Exchange
	// Nearest is, for None, the recorded call of the same tool with the
	// fewest differing arguments (the first recorded among equals), nil
	// when the tool has none; Differ names those arguments.
	Nearest *Exchange
	Differ  []string
}

// Replayer answers requests with recorded answers. Among the recorded
// requests a request matches (exactly, else loosely), it takes the first
// not served yet, in the order of the logs and their lines, so that a
// call recorded twice with different answers (an order read before and
// after its cancellation) replays its answers in order; once all are
// served, the last is served again. Its methods are safe for concurrent
// use; answers depend only on the recordings and the requests before.
type Replayer struct {
	mu     sync.Mutex
	xs     []*Exchange
	keys   []keys           // each exchange's match keys, computed once
	by     map[string][]int // the exchanges of a method (and tool), in order
	served []bool
	tools  []string // the tools the recordings call, in first-call order
}

// keys are what a request is matched by: the canonical text of a call's
// arguments or of other params (_meta left out), and for a call the loose
// text (Loose).
type keys struct{ exact, loose string }

// keysOf returns the match keys of a request of method with params.
func keysOf(method string, params json.RawMessage) (kind string, k keys) {
	if method != mcpmsg.MethodToolsCall {
		return method, keys{exact: canonical(withoutMeta(params))}
	}
	c := mcpmsg.ReadCall(params)
	args := orEmpty(c.Args)
	return method + "\x00" + c.Name, keys{exact: canonical(args), loose: looseText(args)}
}

// NewReplayer returns a Replayer of the sessions' requests the server
// answered (not the proxy, whose answers a replay has no proxy to give).
func NewReplayer(sessions []*Session) *Replayer {
	r := &Replayer{by: map[string][]int{}}
	for _, s := range sessions {
		for i := range s.Exchanges {
			x := &s.Exchanges[i]
			if x.AnsweredBy != mcplog.FromServer {
				continue
			}
			kind, k := keysOf(x.Method, x.Params)
			r.by[kind] = append(r.by[kind], len(r.xs))
			r.xs = append(r.xs, x)
			r.keys = append(r.keys, k)
			if x.Method == mcpmsg.MethodToolsCall && !slices.Contains(r.tools, x.Tool) {
				r.tools = append(r.tools, x.Tool)
			}
		}
	}
	r.served = make([]bool, len(r.xs))
	return r
}

// Len returns the number of recorded answers the Replayer holds.
func (r *Replayer) Len() int { return len(r.xs) }

// Match finds the recorded request whose answer a request of method with
// params gets, and marks it served.
func (r *Replayer) Match(method string, params json.RawMessage) Match {
	kind, want := keysOf(method, params)
	r.mu.Lock()
	defer r.mu.Unlock()
	var exact, loose []int
	for _, i := range r.by[kind] {
		switch k := r.keys[i]; {
		case k.exact == want.exact:
			exact = append(exact, i)
		case method != mcpmsg.MethodToolsCall || k.loose == want.loose:
			loose = append(loose, i)
		}
	}
	for _, m := range []struct {
		how How
		is  []int
	}{{Exact, exact}, {Loose, loose}} {
		if len(m.is) == 0 {
			continue
		}
		pick := m.is[len(m.is)-1]
		for _, i := range m.is {
			if !r.served[i] {
				pick = i
				break
			}
		}
		r.served[pick] = true
		return Match{How: m.how, Exchange: r.xs[pick]}
	}
	// None: the recorded call of the tool with the fewest differing
	// arguments, the first recorded among equals.
	var nearest *Exchange
	var differ []string
	args := orEmpty(mcpmsg.ReadCall(params).Args)
	for _, i := range r.by[kind] {
		if d := differing(orEmpty(r.xs[i].Args), args); nearest == nil || len(d) < len(differ) {
			nearest, differ = r.xs[i], d
		}
	}
	if method != mcpmsg.MethodToolsCall {
		nearest, differ = nil, nil
	}
	return Match{How: None, Nearest: nearest, Differ: differ}
}

// Answer answers one wire line (without its terminator) as the recorded
// server would: a request gets the recorded answer Match finds, with the
// request's id; a notification or a response gets nothing (nil); a line
// that is not JSON-RPC gets a parse error, a batch an array of answers.
// note, when not "", says that a request was answered by a loose match or
// had no match, for the program's diagnostics.
func (r *Replayer) Answer(line []byte) (answer []byte, note string) {
	m := jsonrpc.Classify(line)
	switch m.Kind {
	case jsonrpc.Request:
		return r.answer(m)
	case jsonrpc.Notification, jsonrpc.Response:
		return nil, ""
	case jsonrpc.Batch:
		var outs [][]byte
		var notes []string
		for el := range jsonrpc.Messages(line) {
			if el.Kind != jsonrpc.Request {
				continue
			}
			a, n := r.answer(el)
			outs = append(outs, a)
			if n != "" {
				notes = append(notes, n)
			}
		}
		if len(outs) == 0 {
			return nil, strings.Join(notes, "; ")
		}
		return append(append([]byte{'['}, bytes.Join(outs, []byte{','})...), ']'), strings.Join(notes, "; ")
	}
	return rpcError(json.RawMessage("null"), -32700, "parse error", nil), ""
}

func (r *Replayer) answer(m jsonrpc.Message) ([]byte, string) {
	id := json.RawMessage(m.ID)
	match := r.Match(m.Method, m.Params)
	switch {
	case match.How == None && m.Method == "ping":
		return response(id, "result", json.RawMessage("{}")), ""
	case match.How == None && m.Method == mcpmsg.MethodToolsCall:
		msg := r.noMatch(mcpmsg.ReadCall(m.Params), match)
		return response(id, "result", toolError(msg)), msg
	case match.How == None:
		msg := fmt.Sprintf("no recorded request of method %s", m.Method)
		return rpcError(id, -32601, msg, nil), msg
	}
	x := match.Exchange
	var a []byte
	if x.Error != nil {
		a = response(id, "error", x.Error)
	} else {
		a = response(id, "result", x.Result)
	}
	if match.How == Loose && m.Method == mcpmsg.MethodToolsCall {
		c := mcpmsg.ReadCall(m.Params)
		return a, fmt.Sprintf("%s %s answered as the loosely equal call at %s", c.Name, compact(orEmpty(c.Args)), x.Where())
	}
	return a, ""
}

// noMatch says that a call matches no recorded one, naming the nearest.
func (r *Replayer) noMatch(c mcpmsg.Call, m Match) string {
	head := fmt.Sprintf("no recorded call of %s with arguments %s", c.Name, compact(orEmpty(c.Args)))
	if m.Nearest == nil {
		if len(r.tools) == 0 {
			return fmt.Sprintf("no recorded call of %s: the recordings hold no tool calls", c.Name)
		}
		return fmt.Sprintf("no recorded call of %s: the recordings call %s", c.Name, strings.Join(r.tools, ", "))
	}
	return fmt.Sprintf("%s; the nearest recorded call is %s %s (%s), which differs in %s",
		head, m.Nearest.Tool, compact(orEmpty(m.Nearest.Args)), m.Nearest.Where(), strings.Join(m.Differ, ", "))
}

// response is a JSON-RPC response with member (result or error) raw.
func response(id json.RawMessage, member string, raw json.RawMessage) []byte {
	b := make([]byte, 0, len(raw)+len(id)+40)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"`...)
	b = append(b, member...)
	b = append(b, `":`...)
	b = append(b, raw...)
	return append(b, '}')
}

func rpcError(id json.RawMessage, code int, msg string, data any) []byte {
	e := map[string]any{"code": code, "message": msg}
	if data != nil {
		e["data"] = data
	}
	b, _ := json.Marshal(e)
	return response(id, "error", b)
}

// toolError is a tools/call result that is a tool error saying msg.
func toolError(msg string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": msg}}, "isError": true})
	return b
}

func orEmpty(b json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(b)) == 0 || string(b) == "null" {
		return json.RawMessage("{}")
	}
	return b
}

// compact returns b's canonical text, for messages.
func compact(b json.RawMessage) string { return canonical(b) }

// withoutMeta returns params without their _meta member (a progress
// token, a trace parent, the stateless era's protocol version), which
// says how a request was sent, not what it asks.
func withoutMeta(params json.RawMessage) json.RawMessage {
	if _, ok := jsontext.Lookup(params, "_meta"); !ok {
		return params
	}
	v, ok := jsontext.Parse(params)
	obj, isObj := v.(map[string]any)
	if !ok || !isObj {
		return params
	}
	delete(obj, "_meta")
	if len(obj) == 0 {
		return nil
	}
	return json.RawMessage(jsontext.Canonical(obj))
}

// looseText is the canonical text of b after the loose normalization
// (Loose): strings trimmed, spaces collapsed and lower case, numbers by
// value, null members dropped.
func looseText(b []byte) string {
	v, ok := jsontext.Parse(b)
	if !ok {
		return string(b)
	}
	return jsontext.Canonical(loosen(v))
}

func loosen(v any) any {
	switch x := v.(type) {
	case string:
		return strings.ToLower(strings.Join(strings.Fields(x), " "))
	case json.Number:
		if f, err := strconv.ParseFloat(string(x), 64); err == nil {
			return json.Number(strconv.FormatFloat(f, 'g', -1, 64))
		}
		return x
	case []any:
		out := make([]any, len(x))
		for i, el := range x {
			out[i] = loosen(el)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, el := range x {
			if el != nil {
				out[k] = loosen(el)
			}
		}
		return out
	}
	return v
}

// differing names the members in which two argument objects differ (by
// value; a member present in one only differs), sorted, as toolpin.Fields
// does for tool definitions; for arguments that are not both objects,
// "arguments" when they differ.
func differing(a, b json.RawMessage) []string {
	if jsontext.Kind(a) == '{' && jsontext.Kind(b) == '{' {
		return toolpin.Fields(a, b)
	}
	if canonical(a) == canonical(b) {
		return nil
	}
	return []string{"arguments"}
}
