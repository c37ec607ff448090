package procedure

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hoist-mcp/hoist/binding"
	"github.com/hoist-mcp/hoist/mcplog"
)

// DefaultThink is the think time before each LLM turn after the first when
// neither the file nor the command line sets one. It is just over the half
// second by which the proxy's turn inference tells LLM turns apart
// (hoist-mcp manual, "Log format": LLM turns), so that a procedure's recorded
// session shows one LLM turn per step.
const DefaultThink = 600 * time.Millisecond

// Procedure is a parsed procedure file (docs/procedure.md).
type Procedure struct {
	// File is the name the procedure was read from, for messages.
	File string
	// Name is the header's "procedure".
	Name string
	// Description is the header's "description".
	Description string
	// Params are the parameters the file declares, by name: the default
	// value, or nil when the command line must give one.
	Params map[string]*string
	// Think is the header's think time, or -1 when it sets none.
	Think time.Duration
	// Steps are the LLM turns, in order.
	Steps []Step
}

// Step is one LLM turn of a procedure: one or more tool calls, sent together.
type Step struct {
	// Line is the step's line in the file, from 1.
	Line int
	// Label is the step's "step" text, if any.
	Label string
	// Think is the step's own think time, or -1 when it sets none.
	Think time.Duration
	// Calls are the step's calls, in order.
	Calls []Call
}

// Call is one tool call of a step; its arguments are bound when the step
// runs.
type Call struct {
	Tool string
	// Args are the argument bindings by name.
	Args map[string]Arg
}

// Arg is one argument of a call: a flow binding expression (a constant
// included), or a parameter of the procedure.
type Arg struct {
	// Param is the parameter the argument takes, or "".
	Param string
	// Binding is the binding when Param is "".
	Binding binding.Expr
}

// fileHeader is the first line of a procedure file.
type fileHeader struct {
	Procedure   *string                    `json:"procedure"`
	Description string                     `json:"description"`
	Params      map[string]json.RawMessage `json:"params"`
	ThinkMS     *float64                   `json:"think_ms"`
}

// fileStep is every other line.
type fileStep struct {
	Step    string                     `json:"step"`
	ThinkMS *float64                   `json:"think_ms"`
	Calls   []fileCall                 `json:"calls"`
	Tool    string                     `json:"tool"`
	Args    map[string]json.RawMessage `json:"args"`
}

type fileCall struct {
	Tool string                     `json:"tool"`
	Args map[string]json.RawMessage `json:"args"`
}

// ParseFile reads and checks the procedure file at path.
func ParseFile(path string) (*Procedure, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &mcplog.InputError{File: path, Err: errors.Unwrap(err)}
	}
	defer f.Close()
	return Parse(f, path)
}

// Parse reads and checks a procedure from r; name is the file's name for
// messages. Every error is an *mcplog.InputError naming the line and the
// field at fault, such as "cancel.jsonl:4: calls[0].args.user_id: …".
func Parse(r io.Reader, name string) (*Procedure, error) {
	p := &Procedure{File: name, Think: -1}
	bad := func(line int, field, format string, args ...any) error {
		return &mcplog.InputError{File: name, Line: line, Field: field, Err: fmt.Errorf(format, args...)}
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 4<<20)
	headerLine := 0
	// calledBefore holds the tools that earlier steps call, for checking
	// $last[tool]; calls counts the calls of earlier steps, at least.
	calledBefore := map[string]bool{}
	for n := 1; sc.Scan(); n++ {
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 || text[0] == '#' || bytes.HasPrefix(text, []byte("//")) {
			continue
		}
		if text[0] != '{' {
			return nil, bad(n, "", "want a JSON object on one line (or a comment starting with #)")
		}
		if headerLine == 0 {
			headerLine = n
			if err := p.parseHeader(text, n, bad); err != nil {
				return nil, err
			}
			continue
		}
		st, err := p.parseStep(text, n, calledBefore, bad)
		if err != nil {
			return nil, err
		}
		p.Steps = append(p.Steps, st)
		for _, c := range st.Calls {
			calledBefore[c.Tool] = true
		}
	}
	if err := sc.Err(); err != nil {
		return nil, &mcplog.InputError{File: name, Err: fmt.Errorf("reading: %w", err)}
	}
	if headerLine == 0 {
		return nil, bad(0, "", `empty procedure: want a header line such as {"procedure": "name"} and then one line per step`)
	}
	if len(p.Steps) == 0 {
		return nil, bad(headerLine, "", "the procedure has no steps: add one line per LLM turn after the header")
	}
	return p, nil
}

// decodeStrict decodes one line into v, refusing unknown members, and
// names the member at fault.
func decodeStrict(text []byte, v any) (field string, err error) {
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.DisallowUnknownFields()
	err = dec.Decode(v)
	if err == nil && dec.More() {
		return "", errors.New("want one JSON object per line")
	}
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case err == nil:
		return "", nil
	case errors.As(err, &te):
		return te.Field, fmt.Errorf("want %s, got a JSON %s", mcplog.TypeWord(te.Type), te.Value)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "", errors.New("not JSON: the object does not end on this line (a step is one line)")
	case errors.As(err, &se):
		return "", fmt.Errorf("not JSON at column %d: %v", se.Offset, se)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		f, _ := strconv.Unquote(strings.TrimPrefix(err.Error(), "json: unknown field "))
		return f, errors.New("unknown member")
	}
	return "", err
}

func thinkOf(ms *float64, line int, field string, bad func(int, string, string, ...any) error) (time.Duration, error) {
	if ms == nil {
		return -1, nil
	}
	if *ms < 0 || *ms > 3600_000 {
		return 0, bad(line, field, "want milliseconds from 0 to 3600000, got %v", *ms)
	}
	return time.Duration(*ms * float64(time.Millisecond)), nil
}

func (p *Procedure) parseHeader(text []byte, n int, bad func(int, string, string, ...any) error) error {
	var members map[string]json.RawMessage
	if json.Unmarshal(text, &members) == nil && members["procedure"] == nil {
		return bad(n, "procedure", `the first line is the header and names the procedure: {"procedure": "name", ...}`)
	}
	var h fileHeader
	if field, err := decodeStrict(text, &h); err != nil {
		if field == "" && strings.HasPrefix(err.Error(), "unknown") {
			field = "header"
		}
		return bad(n, field, "header: %v", err)
	}
	if h.Procedure == nil {
		return bad(n, "procedure", `the first line is the header and names the procedure: {"procedure": "name", ...}`)
	}
	p.Name = *h.Procedure
	p.Description = h.Description
	think, err := thinkOf(h.ThinkMS, n, "think_ms", bad)
	if err != nil {
		return err
	}
	p.Think = think
	p.Params = map[string]*string{}
	for name, raw := range h.Params {
		if !validName(name) {
			return bad(n, "params."+name, "a parameter's name is letters, digits and '_'")
		}
		var v *string
		if err := json.Unmarshal(raw, &v); err != nil {
			return bad(n, "params."+name, "want a string (the default value) or null (required on the command line)")
		}
		p.Params[name] = v
	}
	return nil
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c != '_' && (c < '0' || c > '9') && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') {
			return false
		}
	}
	return true
}

func (p *Procedure) parseStep(text []byte, n int, calledBefore map[string]bool, bad func(int, string, string, ...any) error) (Step, error) {
	var fs fileStep
	if field, err := decodeStrict(text, &fs); err != nil {
		return Step{}, bad(n, field, "%v", err)
	}
	st := Step{Line: n, Label: fs.Step}
	think, err := thinkOf(fs.ThinkMS, n, "think_ms", bad)
	if err != nil {
		return Step{}, err
	}
	st.Think = think
	calls := fs.Calls
	prefix := func(i int) string { return fmt.Sprintf("calls[%d].", i) }
	switch {
	case fs.Tool != "" && calls != nil:
		return Step{}, bad(n, "tool", `give either "tool" and "args" for one call or "calls", not both`)
	case fs.Tool != "":
		calls = []fileCall{{Tool: fs.Tool, Args: fs.Args}}
		prefix = func(int) string { return "" }
	case fs.Args != nil:
		return Step{}, bad(n, "args", `"args" goes with "tool"`)
	case len(calls) == 0:
		return Step{}, bad(n, "calls", `a step is one LLM turn and makes at least one call: {"tool": "name", "args": {...}} or {"calls": [...]}`)
	}
	for i, fc := range calls {
		if fc.Tool == "" {
			return Step{}, bad(n, prefix(i)+"tool", "missing the tool's name")
		}
		c := Call{Tool: fc.Tool, Args: map[string]Arg{}}
		names := make([]string, 0, len(fc.Args))
		for k := range fc.Args {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			field := prefix(i) + "args." + k
			a, err := parseArg(fc.Args[k])
			if err != nil {
				return Step{}, bad(n, field, "%v", err)
			}
			if a.Param != "" {
				if _, ok := p.Params[a.Param]; !ok {
					return Step{}, bad(n, field, "$param.%s is not declared in the header's params", a.Param)
				}
			} else if t := a.Binding.Tool(); t != "" && !calledBefore[t] {
				return Step{}, bad(n, field, "no earlier step calls %s, so $last[%s] has nothing to read", t, t)
			}
			c.Args[k] = a
		}
		st.Calls = append(st.Calls, c)
	}
	return st, nil
}

// parseArg reads one argument's value: a string starting with "$" is a
// binding expression or $param.NAME, "$$…" is a string starting with "$",
// and any other JSON value is a constant.
func parseArg(raw json.RawMessage) (Arg, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil && strings.HasPrefix(s, "$") {
		switch {
		case strings.HasPrefix(s, "$$"):
			b, err := binding.Const(s[1:])
			return Arg{Binding: b}, err
		case strings.HasPrefix(s, "$param."):
			name := strings.TrimPrefix(s, "$param.")
			if !validName(name) {
				return Arg{}, fmt.Errorf("%q: want $param.NAME, a name of letters, digits and '_'", s)
			}
			return Arg{Param: name}, nil
		}
		b, err := binding.Parse(s)
		if err != nil {
			return Arg{}, err
		}
		return Arg{Binding: b}, nil
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return Arg{}, err
	}
	b, err := binding.Const(v)
	return Arg{Binding: b}, err
}

// ResolveParams merges the values given on the command line with the
// file's defaults. It refuses a name the file does not declare and a
// required parameter left without a value.
func (p *Procedure) ResolveParams(given map[string]string) (map[string]string, error) {
	out := map[string]string{}
	for k, v := range given {
		if _, ok := p.Params[k]; !ok {
			return nil, fmt.Errorf("--param %s: %s declares no such parameter (it has %s)", k, p.File, p.paramNames())
		}
		out[k] = v
	}
	for k, def := range p.Params {
		if _, ok := out[k]; ok {
			continue
		}
		if def == nil {
			return nil, fmt.Errorf("%s needs --param %s=VALUE", p.File, k)
		}
		out[k] = *def
	}
	return out, nil
}

func (p *Procedure) paramNames() string {
	if len(p.Params) == 0 {
		return "none"
	}
	names := make([]string, 0, len(p.Params))
	for k := range p.Params {
		names = append(names, k)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}
