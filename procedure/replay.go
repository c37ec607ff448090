package procedure

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/jsontext"
	"github.com/hoist-mcp/hoist/mcpmsg"
)

// Recording is the agent of one recorded episode, as Replay plays it back:
// what was said and the LLM turns that called tools, in the order they
// happened, with their recorded times and answers (issue 16).
type Recording struct {
	// Name says where it came from: a log's path, or a results file and
	// a simulation.
	Name string
	// Episode, TaskID and Domain are the episode's.
	Episode string
	TaskID  string
	Domain  string
	Steps   []RecordedStep
	// LLMTurns counts the model's responses: the turns that called tools,
	// and the assistant's messages that were not said with a turn's calls.
	LLMTurns int
	// ToolTurns counts the turns that called tools.
	ToolTurns int
}

// RecordedStep is one step of a recording: exactly one of Message and Turn
// is set. StartMS and EndMS are its recorded span, in milliseconds since
// the episode started: a message's moment, or a turn's first call and last
// answer.
type RecordedStep struct {
	Message        *RecordedMessage
	Turn           *RecordedTurn
	StartMS, EndMS int64
}

// RecordedMessage is a line of the conversation.
type RecordedMessage struct {
	Role string
	Text string
}

// RecordedTurn is one LLM turn that called tools.
type RecordedTurn struct {
	// Index is the turn's index in the episode.
	Index int
	// Said is what the assistant said in the same response, when it said
	// something with its calls (the message just before them): it belongs
	// to the turn, so it is not said when the turn is skipped.
	Said  *RecordedMessage
	Calls []RecordedCall
}

// RecordedCall is one of the agent's calls, with its recorded answer.
type RecordedCall struct {
	Tool string
	Args json.RawMessage
	// Answered is false when the recording holds no answer (the call was
	// cancelled, or its answer unreadable): there is nothing to compare.
	Answered bool
	Text     string
	IsError  bool
}

// NewRecording returns the agent of ep: its conversation and its LLM turns
// with their calls (the agent's only: the proxy's lookups of a recording
// served with a flow are not the agent's). name says where ep came from.
func NewRecording(name string, ep *episode.Episode) *Recording {
	rec := &Recording{Name: name, Episode: ep.ID, TaskID: ep.TaskID, Domain: ep.Domain}
	turnStep := map[int]int{} // episode turn → its step
	for i, ev := range ep.Events {
		switch {
		case ev.Type == episode.EventMessage && ev.Message != nil:
			m := &RecordedMessage{Role: ev.Message.Role, Text: ev.Message.Text}
			if m.Role == "assistant" && i+1 < len(ep.Events) && startsTurn(ep, ep.Events[i+1], turnStep) {
				c := ep.Events[i+1].Call
				turnStep[c.Turn] = len(rec.Steps)
				rec.Steps = append(rec.Steps, RecordedStep{Turn: &RecordedTurn{Index: c.Turn, Said: m}, StartMS: ev.TMS, EndMS: ev.TMS})
				continue
			}
			if m.Role == "assistant" {
				rec.LLMTurns++
			}
			rec.Steps = append(rec.Steps, RecordedStep{Message: m, StartMS: ev.TMS, EndMS: ev.TMS})
		case ev.Type == episode.EventCall && ev.Call != nil && ev.Call.By != episode.Proxy:
			c := ev.Call
			k, ok := turnStep[c.Turn]
			if !ok {
				k = len(rec.Steps)
				turnStep[c.Turn] = k
				rec.Steps = append(rec.Steps, RecordedStep{Turn: &RecordedTurn{Index: c.Turn}, StartMS: ev.TMS, EndMS: ev.TMS})
			}
			st := &rec.Steps[k]
			rc := RecordedCall{Tool: c.Tool, Args: c.Args}
			if len(rc.Args) == 0 {
				rc.Args = json.RawMessage("{}") // a call recorded without arguments is sent with none
			}
			if c.Result != nil {
				rc.Answered, rc.Text, rc.IsError = true, c.Result.Text, c.Result.IsError
			}
			st.Turn.Calls = append(st.Turn.Calls, rc)
			if c.Turn >= 0 && c.Turn < len(ep.Turns) {
				st.EndMS = max(st.EndMS, ep.Turns[c.Turn].EndMS)
			}
		}
	}
	for _, st := range rec.Steps {
		if st.Turn != nil {
			rec.ToolTurns++
		}
	}
	rec.LLMTurns += rec.ToolTurns
	return rec
}

// startsTurn reports whether ev is the agent's first call of a turn not
// yet started.
func startsTurn(ep *episode.Episode, ev episode.Event, started map[int]int) bool {
	if ev.Type != episode.EventCall || ev.Call == nil || ev.Call.By == episode.Proxy {
		return false
	}
	_, ok := started[ev.Call.Turn]
	return !ok
}

// ReplayOptions tune a replay.
type ReplayOptions struct {
	// Context, when set, receives the conversation as it happens, one
	// {"role", "content"} line per message, as a host writes hoist-mcp's
	// --context file.
	Context io.Writer
	// TimeScale multiplies the recorded time between steps: 1 waits as the
	// agent and the customer took, 0 not at all.
	TimeScale float64
	// CallTimeout bounds the wait for each answer; 0 means
	// DefaultCallTimeout.
	CallTimeout time.Duration
	// Sleep waits; nil sleeps for real. Tests make it instant.
	Sleep func(ctx context.Context, d time.Duration) error
}

// ReplayReport is what a replay did. It holds no times, so the same
// recording against the same server and flow reports the same.
type ReplayReport struct {
	Recording string     `json:"recording"`
	Episode   string     `json:"episode"`
	TaskID    string     `json:"task_id,omitempty"`
	Server    ServerInfo `json:"server"`
	// LLMTurns and ToolTurns are the recording's (see Recording).
	LLMTurns  int `json:"llm_turns"`
	ToolTurns int `json:"tool_turns"`
	// TurnsMade are the tool-calling turns replayed, TurnsSkipped those
	// whose every call a lookup had answered.
	TurnsMade    int `json:"turns_made"`
	TurnsSkipped int `json:"turns_skipped"`
	CallsMade    int `json:"calls_made"`
	CallsSkipped int `json:"calls_skipped"`
	// Lookups are the lookups the proxy appended; LookupsUsed those that
	// answered a later call of the agent's, before its next write.
	Lookups     int `json:"lookups"`
	LookupsUsed int `json:"lookups_used"`
	// ResultsCompared are the reads (tools the server marks readOnlyHint
	// true) whose live and recorded results are both known, made or
	// answered by a lookup; ResultsMatched those whose live result equals
	// the recorded one, compared as JSON values when both are JSON.
	ResultsCompared int `json:"results_compared"`
	ResultsMatched  int `json:"results_matched"`
	// ResultsIdentical are the matched reads whose text is the recorded
	// one byte for byte.
	ResultsIdentical int `json:"results_identical"`
	// ToolErrors counts the calls made whose result was an error.
	ToolErrors int          `json:"tool_errors"`
	Turns      []TurnReport `json:"turns"`
	// Listed are the tools the server listed.
	Listed []Tool `json:"-"`
}

// TurnReport is one tool-calling turn of a replay.
type TurnReport struct {
	// Turn is the recorded turn's index in its episode.
	Turn    int                `json:"turn"`
	Skipped bool               `json:"skipped"`
	Calls   []ReplayCallReport `json:"calls"`
}

// ReplayCallReport is one call of a replayed turn.
type ReplayCallReport struct {
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	// Skipped is true when a lookup had answered the call.
	Skipped bool `json:"skipped"`
	IsError bool `json:"is_error"`
	// Matched says whether the live result equals the recorded one; nil
	// when they were not compared (a write, or an answer unknown).
	Matched *bool `json:"matched"`
	// AfterWrite is true for a call after a write of the agent's.
	AfterWrite bool           `json:"after_write"`
	Lookups    []LookupReport `json:"lookups,omitempty"`
}

// Replay plays rec's agent in the session s: it initializes, lists the
// tools, then goes through the recording in order. Each message is written
// to the context; each turn's calls, with their recorded arguments, go out
// together, after the recorded time since the step before (scaled). A
// call whose tool and arguments a lookup appended to an earlier result
// answered, since the agent's last write (a call of a tool the server marks
// readOnlyHint false; one of the same turn counts from its place), is not
// made: the lookup's result stands for it. A turn whose every call was so
// answered is skipped, with what the assistant said with it and its think
// time. The report is returned with an error too, holding the turns that
// ran.
func Replay(ctx context.Context, s Session, rec *Recording, opts ReplayOptions) (*ReplayReport, error) {
	rep := &ReplayReport{Recording: rec.Name, Episode: rec.Episode, TaskID: rec.TaskID,
		LLMTurns: rec.LLMTurns, ToolTurns: rec.ToolTurns, Turns: []TurnReport{}}
	timeout, sleep := defaults(opts.CallTimeout, opts.Sleep)
	info, tools, err := begin(ctx, s, timeout)
	rep.Server, rep.Listed = info, tools
	if err != nil {
		return rep, err
	}
	writes, reads := map[string]bool{}, map[string]bool{}
	for _, t := range tools {
		writes[t.Name] = t.Hinted && !t.ReadOnly
		reads[t.Name] = t.Hinted && t.ReadOnly
	}
	say := func(m *RecordedMessage) error {
		if opts.Context == nil || m == nil {
			return nil
		}
		line := append([]byte(`{"role": `), jsontext.AppendString(nil, m.Role, jsontext.Plain)...)
		line = append(append(line, `, "content": `...), jsontext.AppendString(nil, m.Text, jsontext.Plain)...)
		_, err := opts.Context.Write(append(line, "}\n"...))
		return err
	}
	wait := func(ms int64) error {
		if ms <= 0 || opts.TimeScale <= 0 {
			return nil
		}
		return sleep(ctx, time.Duration(float64(ms)*opts.TimeScale*float64(time.Millisecond)))
	}

	type lookup struct {
		text string
		used bool // a call of the agent's was answered by it
	}
	answered := map[string]*lookup{} // lookups since the agent's last write, by call
	wrote := false                   // the agent has written
	var last int64                   // the recorded end of the step before
	for si, st := range rec.Steps {
		gap := st.StartMS - last
		if si == 0 {
			gap = 0
		}
		last = max(last, st.EndMS)
		if st.Message != nil {
			if err := wait(gap); err != nil {
				return rep, err
			}
			if err := say(st.Message); err != nil {
				return rep, fmt.Errorf("writing the conversation: %w", err)
			}
			continue
		}
		t := st.Turn
		tr := TurnReport{Turn: t.Index, Calls: make([]ReplayCallReport, len(t.Calls))}
		var toMake []int
		stale := false // a write of this turn comes first
		for k, c := range t.Calls {
			cr := &tr.Calls[k]
			cr.Tool, cr.Arguments, cr.AfterWrite = c.Tool, c.Args, wrote || stale
			stale = stale || writes[c.Tool]
			if l, ok := answered[mcpmsg.CallKey(c.Tool, c.Args)]; ok && !stale {
				cr.Skipped = true
				if !l.used {
					l.used = true
					rep.LookupsUsed++
				}
				compare(rep, cr, c, reads[c.Tool], l.text, false, false)
				continue
			}
			toMake = append(toMake, k)
		}
		if len(toMake) == 0 {
			tr.Skipped = true
			rep.TurnsSkipped++
			rep.CallsSkipped += len(t.Calls)
			rep.Turns = append(rep.Turns, tr)
			continue
		}
		fail := func(err error) (*ReplayReport, error) {
			rep.Turns = append(rep.Turns, tr)
			return rep, fmt.Errorf("turn %d: %w", t.Index, err)
		}
		if err := wait(gap); err != nil {
			return fail(err)
		}
		if err := say(t.Said); err != nil {
			return fail(fmt.Errorf("writing the conversation: %w", err))
		}
		rep.TurnsMade++
		rep.CallsSkipped += len(t.Calls) - len(toMake)
		calls := make([]ToolCall, len(toMake))
		for j, k := range toMake {
			calls[j] = ToolCall{Tool: t.Calls[k].Tool, Args: t.Calls[k].Args}
		}
		waits, err := callTools(s, calls)
		if err != nil {
			return fail(err)
		}
		var fresh []mcpmsg.Lookup
		turnWrote := false
		for j, k := range toMake {
			res, err := waits[j](ctx, timeout)
			if err != nil {
				return fail(err)
			}
			c, cr := t.Calls[k], &tr.Calls[k]
			text, ls := res.split()
			fresh = append(fresh, ls...)
			cr.Lookups, cr.IsError = lookupReports(ls), res.IsError
			if res.IsError {
				rep.ToolErrors++
			}
			compare(rep, cr, c, reads[c.Tool], text, res.IsError, true)
			rep.CallsMade++
			turnWrote = turnWrote || writes[c.Tool]
		}
		if turnWrote {
			clear(answered) // what was looked up before a write may be stale
			wrote = true
		}
		for _, l := range fresh {
			rep.Lookups++
			answered[l.Key()] = &lookup{text: l.Text}
		}
		rep.Turns = append(rep.Turns, tr)
	}
	return rep, nil
}

// batchSession is a Session that can send a turn's calls in one write.
type batchSession interface {
	CallTools(calls []ToolCall) ([]func(ctx context.Context, timeout time.Duration) (CallResult, error), error)
}

var _ batchSession = (*Client)(nil)

// callTools sends a turn's calls together: in one write when the session
// can, so that a proxy reads them all before any is answered.
func callTools(s Session, calls []ToolCall) ([]func(context.Context, time.Duration) (CallResult, error), error) {
	if b, ok := s.(batchSession); ok {
		return b.CallTools(calls)
	}
	waits := make([]func(context.Context, time.Duration) (CallResult, error), len(calls))
	for i, c := range calls {
		w, err := s.CallTool(c.Tool, c.Args)
		if err != nil {
			return nil, err
		}
		waits[i] = w
	}
	return waits, nil
}

// compare compares a read's live result with its recorded one, when both
// are known: text equal, or both JSON with the same value (members in any
// order, the same numbers by their digits: the agent reads those); and, for
// a call made, the same isError.
func compare(rep *ReplayReport, cr *ReplayCallReport, c RecordedCall, read bool, text string, isError, made bool) {
	if !read || !c.Answered {
		return
	}
	identical := text == c.Text
	same := identical
	if !same {
		a, okA := jsontext.CanonicalText([]byte(text))
		b, okB := jsontext.CanonicalText([]byte(c.Text))
		same = okA && okB && a == b
	}
	if made && isError != c.IsError {
		same, identical = false, false
	}
	if identical {
		rep.ResultsIdentical++
	}
	cr.Matched = &same
	rep.ResultsCompared++
	if same {
		rep.ResultsMatched++
	}
}

// WriteText writes the report for a person: one line per turn, then the
// totals.
func (r *ReplayReport) WriteText(w io.Writer) error {
	var b strings.Builder
	server := r.Server.Name
	if r.Server.Version != "" {
		server += " " + r.Server.Version
	}
	fmt.Fprintf(&b, "replay of %s against %s\n", r.Recording, server)
	for _, t := range r.Turns {
		head := fmt.Sprintf("turn %d", t.Turn)
		if t.Skipped {
			head += "  skipped"
		} else {
			head += "  made   "
		}
		pad := strings.Repeat(" ", len(head))
		for j, c := range t.Calls {
			lead := head
			if j > 0 {
				lead = pad
			}
			fmt.Fprintf(&b, "%s  %s %s", lead, c.Tool, firstLine(string(c.Arguments), 80))
			switch {
			case c.Skipped:
				b.WriteString("  (answered by a lookup)")
			case c.IsError:
				b.WriteString("  (error)")
			}
			if c.Matched != nil && !*c.Matched {
				b.WriteString("  (differs from the recording)")
			}
			if n := len(c.Lookups); n > 0 {
				fmt.Fprintf(&b, "  +%d lookup%s", n, plural(n))
			}
			b.WriteByte('\n')
		}
	}
	fmt.Fprintf(&b, "%d of %d tool-calling turns made, %d skipped; %d call%s made, %d answered by lookups (%d lookup%s, %d used); %d of %d reads as recorded\n",
		r.TurnsMade, r.ToolTurns, r.TurnsSkipped, r.CallsMade, plural(r.CallsMade), r.CallsSkipped,
		r.Lookups, plural(r.Lookups), r.LookupsUsed, r.ResultsMatched, r.ResultsCompared)
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON writes the report as one indented JSON document.
func (r *ReplayReport) WriteJSON(w io.Writer) error { return writeJSON(w, r) }
