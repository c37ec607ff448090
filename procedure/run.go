package procedure

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/hoist-mcp/hoist/binding"
	"github.com/hoist-mcp/hoist/mcpmsg"
)

// DefaultCallTimeout is how long Run waits for each answer.
const DefaultCallTimeout = 30 * time.Second

// MaxFanOut caps the calls one step's fan-out makes.
const MaxFanOut = 64

// Options tune a run.
type Options struct {
	// Params are the parameters' values, defaults included
	// (Procedure.ResolveParams).
	Params map[string]string
	// Think overrides the think time of the file and its steps when >= 0.
	Think time.Duration
	// CallTimeout bounds the wait for each answer; 0 means
	// DefaultCallTimeout.
	CallTimeout time.Duration
	// Sleep waits out a think time; nil sleeps for real. Tests make it
	// instant.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Report is what a run did: the LLM turns it made and skipped and each call.
// It holds no times, so that the same procedure against the same server
// reports the same.
type Report struct {
	Procedure string            `json:"procedure"`
	File      string            `json:"file"`
	Params    map[string]string `json:"params"`
	Server    ServerInfo        `json:"server"`
	Steps     []StepReport      `json:"steps"`
	// LLMTurns counts the steps that made calls; LLMTurnsSkipped the steps
	// whose every call was already answered by the proxy's lookups.
	LLMTurns        int `json:"llm_turns"`
	LLMTurnsSkipped int `json:"llm_turns_skipped"`
	// Calls counts the calls made; CallsSkipped those answered by lookups.
	Calls        int `json:"calls"`
	CallsSkipped int `json:"calls_skipped"`
	// ToolErrors counts the calls made whose result was an error.
	ToolErrors int `json:"tool_errors"`
}

// StepReport is one step of a run.
type StepReport struct {
	// Step is the step's number, from 1, and Line its line in the file.
	Step  int    `json:"step"`
	Line  int    `json:"line"`
	Label string `json:"label,omitempty"`
	// LLMTurn is the number of the LLM turn the step made, from 1, or 0
	// when it made none (skipped, or a fan-out over nothing).
	LLMTurn int `json:"llm_turn"`
	// Skipped is true when lookups had answered every call of the step.
	Skipped bool         `json:"skipped"`
	Calls   []CallReport `json:"calls"`
}

// CallReport is one call of a step.
type CallReport struct {
	// Index is the call's number in the run, from 0: what $call[N] reads.
	Index     int             `json:"index"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	// Skipped is true when a lookup had answered the call, whose result is
	// then the lookup's.
	Skipped bool   `json:"skipped"`
	IsError bool   `json:"is_error"`
	Text    string `json:"text"`
	// Lookups are the calls the proxy appended to this call's result.
	Lookups []LookupReport `json:"lookups,omitempty"`
}

// LookupReport is a lookup the proxy appended to a result.
type LookupReport struct {
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
}

// StepError is a step that could not run: its binding named nothing, or the
// server did not answer. It names the procedure file's line.
type StepError struct {
	File string
	Line int
	Step int
	Err  error
}

func (e *StepError) Error() string {
	return fmt.Sprintf("%s:%d: step %d: %v", e.File, e.Line, e.Step, e.Err)
}

func (e *StepError) Unwrap() error { return e.Err }

// Session is what Run needs of an MCP session; *Client implements it. Its
// methods are called from one goroutine, except that the waits CallTool
// returns may run concurrently.
type Session interface {
	Initialize(ctx context.Context, timeout time.Duration) (ServerInfo, error)
	ListTools(ctx context.Context, timeout time.Duration) ([]Tool, error)
	CallTool(tool string, args json.RawMessage) (func(ctx context.Context, timeout time.Duration) (CallResult, error), error)
}

var _ Session = (*Client)(nil)

// Run runs p in the session s: it initializes, lists the tools, then makes
// each step's calls as one LLM turn, waiting the think time before each
// turn after the first. A call whose tool and arguments a lookup answered
// since the procedure's last write (any call of a tool the server does not
// mark readOnlyHint true) is not made; its result is the lookup's, for
// later bindings too. A step whose calls were all answered so is a skipped
// LLM turn. The report is returned with an error too, holding the steps
// that ran.
func Run(ctx context.Context, s Session, p *Procedure, opts Options) (*Report, error) {
	rep := &Report{Procedure: p.Name, File: p.File, Params: opts.Params, Steps: []StepReport{}}
	if rep.Params == nil {
		rep.Params = map[string]string{}
	}
	timeout, sleep := defaults(opts.CallTimeout, opts.Sleep)
	info, tools, err := begin(ctx, s, timeout)
	rep.Server = info
	if err != nil {
		return rep, err
	}
	readOnly := map[string]bool{}
	for _, t := range tools {
		readOnly[t.Name] = t.ReadOnly
	}

	scope := &binding.Scope{}
	answered := map[string]mcpmsg.Lookup{} // lookups since the last write, by call
	nCalls := 0
	for i, st := range p.Steps {
		sr := StepReport{Step: i + 1, Line: st.Line, Label: st.Label, Calls: []CallReport{}}
		fail := func(err error) (*Report, error) {
			rep.Steps = append(rep.Steps, sr)
			return rep, &StepError{File: p.File, Line: st.Line, Step: i + 1, Err: err}
		}
		// Bind every call of the step; a fan-out makes several.
		type planned struct {
			tool string
			args json.RawMessage
		}
		var plan []planned
		for _, c := range st.Calls {
			args, err := bindCall(c, scope, opts.Params)
			if err != nil {
				return fail(fmt.Errorf("%s: %w", c.Tool, err))
			}
			for _, a := range args {
				plan = append(plan, planned{c.Tool, a})
			}
		}
		// Which calls did lookups answer?
		var toMake []int
		for k, pc := range plan {
			cr := CallReport{Index: nCalls + k, Tool: pc.tool, Arguments: pc.args}
			if l, ok := answered[mcpmsg.CallKey(pc.tool, pc.args)]; ok {
				cr.Skipped, cr.Text = true, l.Text
			} else {
				toMake = append(toMake, k)
			}
			sr.Calls = append(sr.Calls, cr)
		}
		if len(toMake) > 0 {
			if rep.LLMTurns > 0 {
				think := p.Think
				if st.Think >= 0 {
					think = st.Think
				}
				if opts.Think >= 0 {
					think = opts.Think
				}
				if think < 0 {
					think = DefaultThink
				}
				if err := sleep(ctx, think); err != nil {
					return fail(err)
				}
			}
			rep.LLMTurns++
			sr.LLMTurn = rep.LLMTurns
			// Send the turn's calls together, then wait for each.
			waits := make([]func(context.Context, time.Duration) (CallResult, error), len(toMake))
			for j, k := range toMake {
				w, err := s.CallTool(plan[k].tool, plan[k].args)
				if err != nil {
					return fail(err)
				}
				waits[j] = w
			}
			var fresh []mcpmsg.Lookup
			wrote := false
			for j, k := range toMake {
				res, err := waits[j](ctx, timeout)
				if err != nil {
					return fail(err)
				}
				cr := &sr.Calls[k]
				text, ls := res.split()
				fresh = append(fresh, ls...)
				cr.Text, cr.Lookups = text, lookupReports(ls)
				cr.IsError = res.IsError
				if res.IsError {
					rep.ToolErrors++
				}
				if !readOnly[plan[k].tool] {
					wrote = true
				}
				rep.Calls++
			}
			if wrote {
				clear(answered) // what was looked up before a write may be stale
			}
			for _, l := range fresh {
				answered[l.Key()] = l
			}
		} else if len(plan) > 0 {
			sr.Skipped = true
			rep.LLMTurnsSkipped++
		}
		for k := range sr.Calls {
			cr := sr.Calls[k]
			if cr.Skipped {
				rep.CallsSkipped++
			}
			scope.Add(cr.Index, binding.NewResult(cr.Tool, cr.Text))
		}
		nCalls += len(plan)
		rep.Steps = append(rep.Steps, sr)
	}
	return rep, nil
}

// split parts a result: the call's own text (its text items joined by
// newlines), and the lookups the proxy appended.
func (r CallResult) split() (string, []mcpmsg.Lookup) {
	var texts []string
	var lookups []mcpmsg.Lookup
	for _, t := range r.Texts {
		if ls, ok := mcpmsg.ParseLookups(t); ok {
			lookups = append(lookups, ls...)
			continue
		}
		texts = append(texts, t)
	}
	return strings.Join(texts, "\n"), lookups
}

func lookupReports(ls []mcpmsg.Lookup) []LookupReport {
	var out []LookupReport
	for _, l := range ls {
		out = append(out, LookupReport{Tool: l.Tool, Arguments: l.Args})
	}
	return out
}

// defaults returns the wait for each answer and the sleep a run uses.
func defaults(timeout time.Duration, sleep func(context.Context, time.Duration) error) (time.Duration, func(context.Context, time.Duration) error) {
	if timeout <= 0 {
		timeout = DefaultCallTimeout
	}
	if sleep == nil {
		sleep = sleepCtx
	}
	return timeout, sleep
}

// begin starts a session as every run does: initialize, then tools/list.
func begin(ctx context.Context, s Session, timeout time.Duration) (ServerInfo, []Tool, error) {
	info, err := s.Initialize(ctx, timeout)
	if err != nil {
		return info, nil, err
	}
	tools, err := s.ListTools(ctx, timeout)
	return info, tools, err
}

// bindCall binds a call's arguments: one JSON object per call to make
// (several when a binding fans out, none when it fans out over nothing).
func bindCall(c Call, scope *binding.Scope, params map[string]string) ([]json.RawMessage, error) {
	bindings := make(map[string]binding.Expr, len(c.Args))
	for name, a := range c.Args {
		if a.Param == "" {
			bindings[name] = a.Binding
			continue
		}
		v, ok := params[a.Param]
		if !ok {
			return nil, fmt.Errorf("argument %s: no value for $param.%s", name, a.Param)
		}
		b, err := binding.Const(v)
		if err != nil {
			return nil, err
		}
		bindings[name] = b
	}
	args, err := binding.Args(bindings, scope, MaxFanOut)
	if errors.Is(err, binding.ErrNoValue) {
		return nil, fmt.Errorf("%w (the results so far do not hold it)", err)
	}
	return args, err
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// WriteText writes the report for a person: one line per call, grouped by
// step, then the totals.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	server := r.Server.Name
	if r.Server.Version != "" {
		server += " " + r.Server.Version
	}
	fmt.Fprintf(&b, "procedure %s (%s) against %s\n", r.Procedure, r.File, server)
	for _, st := range r.Steps {
		head := fmt.Sprintf("step %d", st.Step)
		switch {
		case st.Skipped:
			head += "  skipped   "
		case st.LLMTurn > 0:
			head += fmt.Sprintf("  LLM turn %d", st.LLMTurn)
		default:
			head += "  no calls  "
		}
		if len(st.Calls) == 0 {
			fmt.Fprintf(&b, "%s  (a fan-out over an empty list)\n", head)
		}
		pad := strings.Repeat(" ", len(head))
		for j, c := range st.Calls {
			lead := head
			if j > 0 {
				lead = pad
			}
			fmt.Fprintf(&b, "%s  %s %s", lead, c.Tool, c.Arguments)
			switch {
			case c.Skipped:
				b.WriteString("  (answered by a lookup)")
			case c.IsError:
				fmt.Fprintf(&b, "  error: %s", firstLine(c.Text, 80))
			}
			if n := len(c.Lookups); n > 0 {
				fmt.Fprintf(&b, "  +%d lookup%s:", n, plural(n))
				for _, l := range c.Lookups {
					fmt.Fprintf(&b, " %s %s", l.Tool, l.Arguments)
				}
			}
			b.WriteByte('\n')
		}
	}
	fmt.Fprintf(&b, "%d LLM turn%s made, %d skipped; %d call%s made, %d answered by lookups",
		r.LLMTurns, plural(r.LLMTurns), r.LLMTurnsSkipped, r.Calls, plural(r.Calls), r.CallsSkipped)
	if r.ToolErrors > 0 {
		fmt.Fprintf(&b, "; %d error result%s", r.ToolErrors, plural(r.ToolErrors))
	}
	b.WriteByte('\n')
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON writes the report as one indented JSON document.
func (r *Report) WriteJSON(w io.Writer) error { return writeJSON(w, r) }

// writeJSON writes v as one indented JSON document, <, > and & as they are.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func firstLine(s string, max int) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > max {
		s = s[:max] + "…"
	}
	return s
}
