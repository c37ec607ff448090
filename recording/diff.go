package recording

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/hoist-mcp/hoist/jsontext"
	"github.com/hoist-mcp/hoist/mcplog"
	"github.com/hoist-mcp/hoist/mcpmsg"
)

// Report is what Diff found between two recordings.
type Report struct {
	// CallsA and CallsB count the agent's calls in each recording.
	CallsA int `json:"calls_a"`
	CallsB int `json:"calls_b"`
	// Calls are the pairs of calls that differ, in the order of A's calls,
	// then the calls B alone made, in B's order.
	Calls []CallDiff `json:"calls"`
}

// Same reports whether the recordings made the same calls with the same
// answers.
func (r *Report) Same() bool { return len(r.Calls) == 0 }

// CallDiff is one pair of calls that differ: the Nth call of Tool in each
// recording.
type CallDiff struct {
	Tool string `json:"tool"`
	// N counts the tool's calls in each recording from 1.
	N int `json:"n"`
	// A and B say where each call is recorded (file:line), "" for the
	// recording that lacks it.
	A string `json:"a,omitempty"`
	B string `json:"b,omitempty"`
	// Only is "a" or "b" when one recording alone made the call; Changes
	// are then left out.
	Only string `json:"only,omitempty"`
	// Arguments is the call's arguments in the recording that alone made
	// it.
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Changes are the fields that differ, in arguments, result and error.
	Changes []Change `json:"changes,omitempty"`
}

// Change is one field that differs: its path, such as
// arguments.order_id or result.content[0].text.status, and its value in
// each recording as JSON (nil where the field is absent).
type Change struct {
	Path string          `json:"path"`
	A    json.RawMessage `json:"a"`
	B    json.RawMessage `json:"b"`
}

// Diff compares the agent's calls (the host's tools/call requests) of two
// recordings, each one or more sessions in order. The Nth call of a tool
// in A is paired with the Nth call of that tool in B, and each pair is
// compared field by field: the arguments, and the answer (result, or a
// JSON-RPC error), whoever gave it; a text that holds a JSON object or
// array in both is compared as JSON, so a change inside a tool's JSON
// answer names its field. Object members are compared whatever their
// order. A change whose path an ignore pattern matches (Ignored) is left
// out.
func Diff(a, b []*Session, ignore ...string) Report {
	ig := compileIgnore(ignore)
	ca, cb := agentCalls(a), agentCalls(b)
	r := Report{CallsA: len(ca), CallsB: len(cb)}
	nb := map[string][]*Exchange{}
	for _, x := range cb {
		nb[x.Tool] = append(nb[x.Tool], x)
	}
	seen := map[string]int{}
	for _, x := range ca {
		n := seen[x.Tool]
		seen[x.Tool]++
		if n >= len(nb[x.Tool]) {
			r.Calls = append(r.Calls, CallDiff{Tool: x.Tool, N: n + 1, A: x.Where(), Only: "a", Arguments: orEmpty(x.Args)})
			continue
		}
		y := nb[x.Tool][n]
		var ch []Change
		diffValues(&ch, "arguments", parsed(orEmpty(x.Args)), parsed(orEmpty(y.Args)))
		diffValues(&ch, "result", parsed(x.Result), parsed(y.Result))
		diffValues(&ch, "error", parsed(x.Error), parsed(y.Error))
		ch = slices.DeleteFunc(ch, func(c Change) bool { return ig(x.Tool, c.Path) })
		if len(ch) > 0 {
			r.Calls = append(r.Calls, CallDiff{Tool: x.Tool, N: n + 1, A: x.Where(), B: y.Where(), Changes: ch})
		}
	}
	// The calls B alone made, in B's order.
	nth := map[string]int{}
	for _, y := range cb {
		n := nth[y.Tool]
		nth[y.Tool]++
		if n >= seen[y.Tool] {
			r.Calls = append(r.Calls, CallDiff{Tool: y.Tool, N: n + 1, B: y.Where(), Only: "b", Arguments: orEmpty(y.Args)})
		}
	}
	return r
}

// agentCalls lists the host's tools/call requests of the sessions, in
// order.
func agentCalls(ss []*Session) []*Exchange {
	var out []*Exchange
	for _, s := range ss {
		for i := range s.Exchanges {
			if x := &s.Exchanges[i]; x.From == mcplog.FromClient && x.Method == mcpmsg.MethodToolsCall {
				out = append(out, x)
			}
		}
	}
	return out
}

// absent marks a value that is not there, as opposed to JSON null.
type absentValue struct{}

var absent any = absentValue{}

func parsed(b json.RawMessage) any {
	if b == nil {
		return absent
	}
	v, ok := jsontext.Parse(b)
	if !ok {
		return string(b)
	}
	return v
}

// diffValues appends the changes between x and y under path.
func diffValues(out *[]Change, path string, x, y any) {
	if sx, ok := x.(string); ok {
		if sy, ok := y.(string); ok && sx != sy {
			jx, okx := jsonText(sx)
			jy, oky := jsonText(sy)
			if okx && oky {
				diffValues(out, path, jx, jy)
				return
			}
		}
	}
	switch vx := x.(type) {
	case map[string]any:
		if vy, ok := y.(map[string]any); ok {
			names := make([]string, 0, len(vx)+len(vy))
			for k := range vx {
				names = append(names, k)
			}
			for k := range vy {
				if _, ok := vx[k]; !ok {
					names = append(names, k)
				}
			}
			slices.Sort(names)
			for _, k := range names {
				ex, okx := vx[k]
				ey, oky := vy[k]
				if !okx {
					ex = absent
				}
				if !oky {
					ey = absent
				}
				diffValues(out, member(path, k), ex, ey)
			}
			return
		}
	case []any:
		if vy, ok := y.([]any); ok {
			for i := range max(len(vx), len(vy)) {
				ex, ey := absent, absent
				if i < len(vx) {
					ex = vx[i]
				}
				if i < len(vy) {
					ey = vy[i]
				}
				diffValues(out, path+"["+strconv.Itoa(i)+"]", ex, ey)
			}
			return
		}
	}
	if jx, jy := encode(x), encode(y); string(jx) != string(jy) {
		*out = append(*out, Change{Path: path, A: jx, B: jy})
	}
}

// jsonText parses a text that holds a JSON object or array.
func jsonText(s string) (any, bool) {
	if k := jsontext.Kind([]byte(s)); k != '{' && k != '[' {
		return nil, false
	}
	v, ok := jsontext.ParseString(s)
	return v, ok
}

// encode returns v's canonical JSON, nil when absent.
func encode(v any) json.RawMessage {
	if v == absent {
		return nil
	}
	return json.RawMessage(jsontext.Canonical(v))
}

// member appends a member name to a path: .name when it is a plain
// identifier, else ["name"].
func member(path, name string) string {
	plain := name != ""
	for i, c := range name {
		if !(c == '_' || c == '-' && i > 0 || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' && i > 0) {
			plain = false
			break
		}
	}
	if plain {
		return path + "." + name
	}
	return fmt.Sprintf("%s[%s]", path, jsontext.Canonical(name))
}

// compileIgnore returns the test of a change against ignore patterns. A
// pattern is a path as a Change names it, such as
// result.content[0].text.updated_at, optionally after "TOOL:" to apply to
// one tool only; * stands for any member name and [*] for any index. A
// pattern matches a path and every path under it.
func compileIgnore(patterns []string) func(tool, path string) bool {
	type pat struct {
		tool string
		re   *regexp.Regexp
	}
	var ps []pat
	for _, p := range patterns {
		var tool string
		if i := strings.Index(p, ":"); i > 0 && !strings.ContainsAny(p[:i], ".[") {
			tool, p = p[:i], p[i+1:]
		}
		q := regexp.QuoteMeta(p)
		q = strings.ReplaceAll(q, `\[\*\]`, `\[\d+\]`)
		q = strings.ReplaceAll(q, `\*`, `[^.\[]*`)
		ps = append(ps, pat{tool, regexp.MustCompile(`^` + q + `(?:$|[.\[])`)})
	}
	return func(tool, path string) bool {
		for _, p := range ps {
			if (p.tool == "" || p.tool == tool) && p.re.MatchString(path) {
				return true
			}
		}
		return false
	}
}
