package episode

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hoist-mcp/hoist/mcplog"
	"github.com/hoist-mcp/hoist/mcpmsg"
)

// ToolKinds gives each domain's tools their kind: domain → tool → kind, in
// the shape of τ²-bench's tool_kinds.json (issue 3, point 3).
type ToolKinds map[string]map[string]Kind

// LoadToolKinds reads a tool-kinds manifest: a JSON object of domains, each
// an object of tool names to "read", "write" or "generic". It also reads
// the richer tools.json shape, {"domains": {domain: {tool: {"kind": …}}}}.
func LoadToolKinds(path string) (ToolKinds, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading tool kinds: %w", err)
	}
	kinds, err := ParseToolKinds(data)
	if err != nil {
		var ie *mcplog.InputError
		if errors.As(err, &ie) {
			ie.File = path
			return nil, ie
		}
		return nil, &mcplog.InputError{File: path, Err: err}
	}
	return kinds, nil
}

// ParseToolKinds parses a tool-kinds manifest (see LoadToolKinds).
func ParseToolKinds(data []byte) (ToolKinds, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, jsonProblem(data, err)
	}
	if rich, ok := top["domains"]; ok {
		var domains map[string]map[string]struct {
			Kind Kind `json:"kind"`
		}
		if err := json.Unmarshal(rich, &domains); err != nil {
			return nil, &mcplog.InputError{Field: "domains", Err: jsonProblem(rich, err)}
		}
		out := ToolKinds{}
		for d, tools := range domains {
			out[d] = map[string]Kind{}
			for name, tl := range tools {
				k, err := checkKind(tl.Kind)
				if err != nil {
					return nil, &mcplog.InputError{Field: "domains." + d + "." + name + ".kind", Err: err}
				}
				out[d][name] = k
			}
		}
		return out, nil
	}
	out := ToolKinds{}
	for d, raw := range top {
		var tools map[string]Kind
		if err := json.Unmarshal(raw, &tools); err != nil {
			return nil, &mcplog.InputError{Field: d, Err: errors.New("want an object of tool names to kinds")}
		}
		out[d] = map[string]Kind{}
		for name, k := range tools {
			k, err := checkKind(k)
			if err != nil {
				return nil, &mcplog.InputError{Field: d + "." + name, Err: err}
			}
			out[d][name] = k
		}
	}
	return out, nil
}

func checkKind(k Kind) (Kind, error) {
	switch k {
	case Read, Write, Generic:
		return k, nil
	}
	return "", fmt.Errorf("unknown tool kind %q (want read, write or generic)", k)
}

// ToolSchemas gives each domain's tools their input contract: domain →
// tool → inputSchema, raw.
type ToolSchemas map[string]map[string]json.RawMessage

// LoadToolSchemas reads the input contracts of a tools.json manifest,
// {"domains": {domain: {tool: {"inputSchema": …}}}}, the shape of
// τ²-bench's tools.json.
func LoadToolSchemas(path string) (ToolSchemas, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading tool schemas: %w", err)
	}
	var doc struct {
		Domains map[string]map[string]struct {
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"domains"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, &mcplog.InputError{File: path, Err: jsonProblem(data, err)}
	}
	if doc.Domains == nil {
		return nil, &mcplog.InputError{File: path, Field: "domains", Err: errors.New("missing")}
	}
	out := ToolSchemas{}
	for d, tools := range doc.Domains {
		out[d] = map[string]json.RawMessage{}
		for name, tl := range tools {
			out[d][name] = tl.InputSchema
		}
	}
	return out, nil
}

// Kind returns a tool's kind in a domain, or Generic when the manifest does
// not say.
func (k ToolKinds) Kind(domain, tool string) Kind {
	if kind, ok := k[domain][tool]; ok {
		return kind
	}
	return Generic
}

// Tau2Options tune how a τ²-bench results file becomes episodes.
type Tau2Options struct {
	// Kinds gives the tools their kinds; without it, or for a tool it does
	// not name, a tool is Generic.
	Kinds ToolKinds
	// Schemas, when given, gives the tools their input contracts.
	Schemas ToolSchemas
	// Domain is used when the file's info.environment_info.domain_name is
	// missing.
	Domain string
}

// ReadTau2File reads a τ²-bench results file and returns one Episode per
// simulation (see EachTau2).
func ReadTau2File(path string, opt Tau2Options) ([]*Episode, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening τ²-bench results: %w", err)
	}
	defer f.Close()
	var eps []*Episode
	err = EachTau2(f, path, opt, func(ep *Episode) error {
		eps = append(eps, ep)
		return nil
	})
	return eps, err
}

// EachTau2 reads a τ²-bench results file from r, streaming, and calls fn
// with the Episode of each simulation in file order, until fn returns an
// error (which EachTau2 returns). name is the file's path: errors name it,
// and each Episode's ID is "<base name without .json>#<simulation id>".
//
// The mapping (issue 3, point 3): every assistant message with tool calls
// is one LLM turn, exactly, and each of its calls (by the agent) a Call; a
// tool message is the result of the pending call of its id, the oldest
// first when an id repeats (content → Text; error: true → IsError, and
// where a file leaves error null, as some do, content starting "Error:",
// which is how τ²-bench words a tool's failure); user and assistant text
// become Message events; task id, trial, reward (reward_info.reward) and
// agent model (info.agent_info.llm) come from the file. Calls the user simulator makes
// (requestor "user") are not the agent's and are left out, with their
// results. A call left without a result is Cancelled, as a log that ended
// without its answer. Event times come from the messages' timestamps,
// relative to the simulation's start_time, never decreasing.
func EachTau2(r io.Reader, name string, opt Tau2Options, fn func(*Episode) error) error {
	cr := &lineCounter{r: bufio.NewReaderSize(r, 64<<10)}
	dec := json.NewDecoder(cr)
	dec.UseNumber()
	fail := func(field string, err error) error {
		var ie *mcplog.InputError
		if errors.As(err, &ie) {
			if ie.File == "" {
				ie.File = name
			}
			if ie.Line == 0 {
				ie.Line = cr.lineAt(dec.InputOffset())
			}
			return ie
		}
		return &mcplog.InputError{File: name, Line: cr.lineAt(dec.InputOffset()), Field: field, Err: err}
	}
	if err := expectDelim(dec, '{'); err != nil {
		return fail("", fmt.Errorf("not a τ²-bench results file: %w", err))
	}
	base := strings.TrimSuffix(filepath.Base(name), ".json")
	var (
		info     tau2Info
		haveInfo bool
		sawSims  bool
		pending  []json.RawMessage // simulations read before info
		index    int
	)
	emit := func(raw json.RawMessage, line int) error {
		var sim tau2Simulation
		if err := json.Unmarshal(raw, &sim); err != nil {
			return &mcplog.InputError{File: name, Line: line, Field: fmt.Sprintf("simulations[%d]", index), Err: jsonProblem(raw, err)}
		}
		ep, err := sim.episode(base, &info, opt)
		if err != nil {
			field := fmt.Sprintf("simulations[%d]", index)
			var fe *fieldError
			if errors.As(err, &fe) {
				field += "." + fe.field
				err = fe.err
			}
			return &mcplog.InputError{File: name, Line: line, Field: field, Err: err}
		}
		index++
		return fn(ep)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fail("", err)
		}
		key, _ := tok.(string)
		switch key {
		case "info":
			if err := dec.Decode(&info); err != nil {
				return fail("info", decodeProblem(err))
			}
			haveInfo = true
			for _, raw := range pending {
				if err := emit(raw, 0); err != nil {
					return err
				}
			}
			pending = nil
		case "simulations":
			sawSims = true
			if err := expectDelim(dec, '['); err != nil {
				return fail("simulations", err)
			}
			for dec.More() {
				var raw json.RawMessage
				if err := dec.Decode(&raw); err != nil {
					return fail(fmt.Sprintf("simulations[%d]", index+len(pending)), decodeProblem(err))
				}
				line := cr.lineAt(dec.InputOffset() - int64(len(raw)))
				if !haveInfo {
					pending = append(pending, raw)
					continue
				}
				if err := emit(raw, line); err != nil {
					return err
				}
			}
			if err := expectDelim(dec, ']'); err != nil {
				return fail("simulations", err)
			}
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return fail(key, decodeProblem(err))
			}
		}
	}
	if err := expectDelim(dec, '}'); err != nil {
		return fail("", err)
	}
	if !sawSims {
		return fail("simulations", errors.New("missing: not a τ²-bench results file"))
	}
	for _, raw := range pending {
		if err := emit(raw, 0); err != nil {
			return err
		}
	}
	return nil
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("want %q, got %v", want, tok)
	}
	return nil
}

// lineCounter counts the lines of what a json.Decoder read, so that an
// offset maps to a line number.
type lineCounter struct {
	r    io.Reader
	read int64
	nls  []int64 // offsets of the newlines read so far
	full bool    // nls stopped growing: later lines are not known
}

// maxNewlines bounds the memory that line numbers take (8 MiB).
const maxNewlines = 1 << 20

func (c *lineCounter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	for i := 0; i < n && !c.full; i++ {
		if p[i] == '\n' {
			c.nls = append(c.nls, c.read+int64(i))
			c.full = len(c.nls) >= maxNewlines
		}
	}
	c.read += int64(n)
	return n, err
}

// lineAt returns the line (from 1) of an offset, or 0 when it is past the
// lines counted.
func (c *lineCounter) lineAt(off int64) int {
	if c.full && off > c.nls[len(c.nls)-1] {
		return 0
	}
	return 1 + sort.Search(len(c.nls), func(i int) bool { return c.nls[i] >= off })
}

type tau2Info struct {
	AgentInfo struct {
		LLM string `json:"llm"`
	} `json:"agent_info"`
	EnvironmentInfo struct {
		DomainName string `json:"domain_name"`
	} `json:"environment_info"`
}

type tau2Simulation struct {
	ID         string          `json:"id"`
	TaskID     json.RawMessage `json:"task_id"`
	Trial      *json.Number    `json:"trial"`
	StartTime  string          `json:"start_time"`
	RewardInfo *struct {
		Reward *json.Number `json:"reward"`
	} `json:"reward_info"`
	Messages []json.RawMessage `json:"messages"`
}

type tau2Message struct {
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	ToolCalls []struct {
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Requestor string          `json:"requestor"`
	} `json:"tool_calls"`
	ID        string `json:"id"`
	Error     *bool  `json:"error"`
	Requestor string `json:"requestor"`
	Timestamp string `json:"timestamp"`
}

// fieldError carries the member of a simulation at fault.
type fieldError struct {
	field string
	err   error
}

func (e *fieldError) Error() string { return e.field + ": " + e.err.Error() }
func (e *fieldError) Unwrap() error { return e.err }

// decodeProblem words an error of a streaming decode.
func decodeProblem(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Errorf("%s: want %s, got a JSON %s", te.Field, mcplog.TypeWord(te.Type), te.Value)
	}
	return err
}

// tau2Time parses τ²-bench's timestamps (ISO 8601, UTC when no zone).
func tau2Time(s string) (time.Time, bool) {
	for _, layout := range []string{"2006-01-02T15:04:05.999999999", time.RFC3339Nano} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

func (sim *tau2Simulation) episode(base string, info *tau2Info, opt Tau2Options) (*Episode, error) {
	if sim.ID == "" {
		return nil, &fieldError{"id", errors.New("missing")}
	}
	domain := info.EnvironmentInfo.DomainName
	if domain == "" {
		domain = opt.Domain
	}
	ep := &Episode{
		ID:          base + "#" + sim.ID,
		Source:      SourceTau2,
		Domain:      domain,
		HostSession: "tau2-" + sim.ID,
		AgentModel:  info.AgentInfo.LLM,
		TaskID:      idText(sim.TaskID),
		Servers:     []Server{{Name: domain}},
	}
	if sim.Trial != nil {
		n, err := strconv.Atoi(sim.Trial.String())
		if err != nil {
			return nil, &fieldError{"trial", fmt.Errorf("want an integer, got %s", sim.Trial)}
		}
		ep.Trial = n
	}
	if sim.RewardInfo != nil && sim.RewardInfo.Reward != nil {
		r, err := sim.RewardInfo.Reward.Float64()
		if err != nil {
			return nil, &fieldError{"reward_info.reward", fmt.Errorf("want a number, got %s", *sim.RewardInfo.Reward)}
		}
		ep.Reward = &r
	}
	start, haveStart := tau2Time(sim.StartTime)
	if haveStart {
		ep.Started = start
	}
	var (
		tms     int64
		calls   []*Call
		pending = map[string][]int{} // tool call id → its calls awaiting a result, in order
		used    = map[string]bool{}
	)
	for i, raw := range sim.Messages {
		var m tau2Message
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, &fieldError{fmt.Sprintf("messages[%d]", i), jsonProblem(raw, err)}
		}
		if t, ok := tau2Time(m.Timestamp); ok && haveStart {
			if ms := t.Sub(start).Milliseconds(); ms > tms {
				tms = ms
			}
		}
		switch m.Role {
		case "user", "assistant":
			if text := mcpmsg.ContentText(m.Content); text != "" {
				ep.Events = append(ep.Events, Event{Type: EventMessage, TMS: tms, Message: &Message{Role: m.Role, Text: text}})
			}
			if m.Role != "assistant" || len(m.ToolCalls) == 0 {
				continue
			}
			var turn *Turn
			for j, tc := range m.ToolCalls {
				if tc.Requestor == "user" {
					continue // the user simulator's own tools: not the agent's
				}
				if turn == nil {
					ep.Turns = append(ep.Turns, Turn{Index: len(ep.Turns), StartMS: tms, EndMS: tms})
					turn = &ep.Turns[len(ep.Turns)-1]
				}
				if tc.Name == "" {
					return nil, &fieldError{fmt.Sprintf("messages[%d].tool_calls[%d].name", i, j), errors.New("missing")}
				}
				id, _ := json.Marshal(tc.ID)
				c := &Call{
					Index:  len(calls),
					ID:     string(id),
					Server: domain,
					Tool:   tc.Name,
					Args:   tc.Arguments,
					By:     Agent,
					Turn:   turn.Index,
				}
				calls = append(calls, c)
				turn.Calls = append(turn.Calls, c.Index)
				pending[tc.ID] = append(pending[tc.ID], c.Index)
				used[tc.Name] = true
				ep.Events = append(ep.Events, Event{Type: EventCall, TMS: tms, Call: c})
			}
		case "tool":
			q := pending[m.ID]
			if len(q) == 0 {
				continue // a result of the user's tools, or of nothing
			}
			idx := q[0]
			pending[m.ID] = q[1:]
			c := calls[idx]
			text := mcpmsg.ContentText(m.Content)
			isErr := strings.HasPrefix(text, "Error:") // files that leave error null
			if m.Error != nil {
				isErr = *m.Error
			}
			res := &Result{CallIndex: idx, Text: text, IsError: isErr, Raw: raw}
			c.Result = res
			ep.Events = append(ep.Events, Event{Type: EventResult, TMS: tms, Result: res})
			if tn := &ep.Turns[c.Turn]; tms > tn.EndMS {
				tn.EndMS = tms
			}
		}
	}
	for _, q := range pending {
		for _, idx := range q {
			calls[idx].Cancelled = true
		}
	}
	ep.Tools = tau2Tools(domain, opt, used)
	return ep, nil
}

// tau2Tools lists the domain's tools the manifests name, then the tools
// the episode used that they do not (Generic), each sorted by name.
func tau2Tools(domain string, opt Tau2Options, used map[string]bool) []Tool {
	known := map[string]bool{}
	for name := range opt.Kinds[domain] {
		known[name] = true
	}
	for name := range opt.Schemas[domain] {
		known[name] = true
	}
	var names, extra []string
	for name := range known {
		names = append(names, name)
	}
	for name := range used {
		if !known[name] {
			extra = append(extra, name)
		}
	}
	sort.Strings(names)
	sort.Strings(extra)
	var tools []Tool
	for _, name := range append(names, extra...) {
		tools = append(tools, Tool{Name: name, Server: domain, Kind: opt.Kinds.Kind(domain, name), InputSchema: opt.Schemas[domain][name]})
	}
	return tools
}
